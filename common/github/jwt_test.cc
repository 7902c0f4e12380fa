#include "common/github/jwt.h"

#include <gtest/gtest.h>
#include <openssl/pem.h>

#include "common/github/test_support.h"
#include "common/json.h"

namespace runpool::github {
namespace {

using testing::test_key;
using testing::verify_rs256;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == sep) parts.emplace_back();
    else parts.back() += c;
  }
  return parts;
}

TEST(Base64Url, RoundTripsEveryLengthWithoutPaddingOrUnsafeCharacters) {
  std::string bytes;
  for (int n = 0; n < 70; ++n) {
    std::string enc = base64url_encode(bytes);
    EXPECT_EQ(enc.find_first_of("+/="), std::string::npos) << enc;
    EXPECT_EQ(enc.size(), (bytes.size() * 4 + 2) / 3);
    EXPECT_EQ(base64url_decode(enc), bytes);
    bytes += static_cast<char>((n * 37 + 251) & 0xff);
  }
}

TEST(Base64Url, KnownVectorsAndBadInput) {
  EXPECT_EQ(base64url_encode("\xfb\xff"), "-_8");
  EXPECT_EQ(base64url_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64url_encode("fo"), "Zm8");
  EXPECT_EQ(base64url_decode("Zm8="), "fo");  // padding tolerated on input
  EXPECT_EQ(base64url_decode("Zm9v+mFy"), std::nullopt);
  EXPECT_EQ(base64url_decode("Z"), std::nullopt);
  EXPECT_EQ(base64url_decode("Zm 9"), std::nullopt);
}

TEST(AppJwt, HasRs256HeaderBackdatedClaimsAndAVerifiableSignature) {
  auto key = RsaPrivateKey::from_pem(Secret(test_key().pkcs1_pem));
  WallTime now{std::chrono::seconds(1'700'000'000)};
  Secret jwt = make_app_jwt(key, "Iv1.abc123", now);
  auto parts = split(jwt.reveal(), '.');
  ASSERT_EQ(parts.size(), 3u);

  auto header = parse_json(*base64url_decode(parts[0]), "header");
  EXPECT_EQ(header["alg"].asString(), "RS256");
  EXPECT_EQ(header["typ"].asString(), "JWT");
  auto claims = parse_json(*base64url_decode(parts[1]), "claims");
  EXPECT_EQ(claims["iat"].asInt64(), 1'700'000'000 - 60);
  EXPECT_EQ(claims["exp"].asInt64(), 1'700'000'000 + 9 * 60);
  EXPECT_EQ(claims["iss"].asString(), "Iv1.abc123");
  EXPECT_EQ(claims.size(), 3u);

  auto sig = base64url_decode(parts[2]);
  ASSERT_TRUE(sig);
  EXPECT_EQ(sig->size(), 256u);  // RSA-2048
  EXPECT_TRUE(verify_rs256(test_key().pkey.get(), parts[0] + "." + parts[1], *sig));
  // The signature covers the claims: a forged expiry does not verify.
  std::string forged = base64url_encode(R"({"iat":1699999940,"exp":1800000000,"iss":"Iv1.abc123"})");
  EXPECT_FALSE(verify_rs256(test_key().pkey.get(), parts[0] + "." + forged, *sig));
}

TEST(AppJwt, LifetimeIsClampedToGithubsTenMinutes) {
  auto key = RsaPrivateKey::from_pem(Secret(test_key().pkcs8_pem));
  WallTime now{std::chrono::seconds(1'700'000'000)};
  auto parts = split(make_app_jwt(key, "12345", now, std::chrono::hours(1)).reveal(), '.');
  auto claims = parse_json(*base64url_decode(parts[1]), "claims");
  EXPECT_EQ(claims["exp"].asInt64(), 1'700'000'000 + 600);
  EXPECT_EQ(claims["iss"].asString(), "12345");  // an App ID travels as given
}

TEST(RsaPrivateKey, RejectsWhatIsNotAnUnencryptedRsaKeyWithoutQuotingIt) {
  auto expect_rejected = [](const std::string& pem) {
    try {
      RsaPrivateKey::from_pem(Secret(pem));
      ADD_FAILURE() << "accepted a bad key";
    } catch (const std::invalid_argument& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("GitHub App private key"), std::string::npos);
      if (pem.size() > 40) {
        EXPECT_EQ(what.find(pem.substr(30, 20)), std::string::npos) << what;
      }
    }
  };
  expect_rejected("");
  expect_rejected("not a key at all");
  // A truncated PEM.
  expect_rejected(test_key().pkcs1_pem.substr(0, test_key().pkcs1_pem.size() / 2));
  // An EC key: RS256 needs RSA.
  std::shared_ptr<EVP_PKEY> ec(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"), EVP_PKEY_free);
  ASSERT_TRUE(ec);
  expect_rejected(testing::pem_of(ec.get(), false));
  // An encrypted key: refused, and no passphrase prompt.
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  char pass[] = "passphrase";
  ASSERT_EQ(PEM_write_bio_PKCS8PrivateKey(bio.get(), test_key().pkey.get(), EVP_aes_256_cbc(), pass,
                                          sizeof pass - 1, nullptr, nullptr), 1);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  expect_rejected(std::string(data, n));
}

}  // namespace
}  // namespace runpool::github
