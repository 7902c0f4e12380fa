#include "common/pool/sealed_field.h"

#include <sodium.h>

#include <stdexcept>
#include <vector>

namespace runpool::pool {
namespace {

void ensure_sodium() {
  // Safe to call from several threads and more than once; -1 means no usable randomness.
  static const int ready = sodium_init();
  if (ready < 0) throw std::runtime_error("libsodium could not initialise (no source of randomness)");
}

std::string to_base64(const unsigned char* data, size_t size) {
  std::string out(sodium_base64_encoded_len(size, sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(out.data(), out.size(), data, size, sodium_base64_VARIANT_ORIGINAL);
  out.resize(out.size() - 1);  // the terminating NUL
  return out;
}

std::optional<std::vector<unsigned char>> from_base64(std::string_view text) {
  std::vector<unsigned char> out(text.size() / 4 * 3 + 3);
  size_t size = 0;
  const char* end = nullptr;
  if (sodium_base642bin(out.data(), out.size(), text.data(), text.size(), nullptr, &size, &end,
                        sodium_base64_VARIANT_ORIGINAL) != 0 ||
      end != text.data() + text.size()) {
    return std::nullopt;
  }
  out.resize(size);
  return out;
}

std::optional<std::vector<unsigned char>> key_bytes(std::string_view base64, size_t size) {
  auto bytes = from_base64(base64);
  if (!bytes || bytes->size() != size) return std::nullopt;
  return bytes;
}

std::string plaintext(int64_t generation, std::string_view field, const Secret& value) {
  return std::to_string(generation) + "\n" + std::string(field) + "\n" + value.reveal();
}

}  // namespace

SealKeys make_seal_keys() {
  ensure_sodium();
  unsigned char pk[crypto_box_PUBLICKEYBYTES];
  unsigned char sk[crypto_box_SECRETKEYBYTES];
  crypto_box_keypair(pk, sk);
  SealKeys keys{to_base64(pk, sizeof pk), Secret(to_base64(sk, sizeof sk))};
  sodium_memzero(sk, sizeof sk);
  return keys;
}

bool keys_match(const std::string& public_key, const Secret& private_key) {
  ensure_sodium();
  auto pk = key_bytes(public_key, crypto_box_PUBLICKEYBYTES);
  auto sk = key_bytes(private_key.reveal(), crypto_box_SECRETKEYBYTES);
  if (!pk || !sk) return false;
  unsigned char derived[crypto_box_PUBLICKEYBYTES];
  crypto_scalarmult_base(derived, sk->data());
  sodium_memzero(sk->data(), sk->size());
  return sodium_memcmp(derived, pk->data(), sizeof derived) == 0;
}

bool is_sealed(const Secret& stored) { return stored.reveal().compare(0, kSealedPrefix.size(), kSealedPrefix) == 0; }

Secret seal_field(const std::string& public_key, int64_t generation, std::string_view field, const Secret& value) {
  ensure_sodium();
  auto pk = key_bytes(public_key, crypto_box_PUBLICKEYBYTES);
  if (!pk) throw std::invalid_argument("the instance's seal key is not a base64 X25519 public key");
  std::string message = plaintext(generation, field, value);
  std::vector<unsigned char> box(message.size() + crypto_box_SEALBYTES);
  crypto_box_seal(box.data(), reinterpret_cast<const unsigned char*>(message.data()), message.size(), pk->data());
  sodium_memzero(message.data(), message.size());
  return Secret(std::string(kSealedPrefix) + to_base64(box.data(), box.size()));
}

OpenedField open_field(const SealKeys& keys, int64_t generation, std::string_view field, const Secret& stored) {
  ensure_sodium();
  OpenedField out;
  if (!is_sealed(stored)) {
    out.error = "not sealed";
    return out;
  }
  auto pk = key_bytes(keys.public_key, crypto_box_PUBLICKEYBYTES);
  auto sk = key_bytes(keys.private_key.reveal(), crypto_box_SECRETKEYBYTES);
  auto box = from_base64(std::string_view(stored.reveal()).substr(kSealedPrefix.size()));
  if (!pk || !sk) {
    out.error = "no usable key";
  } else if (!box || box->size() < crypto_box_SEALBYTES) {
    out.error = "not a sealed box";
  } else {
    std::string message(box->size() - crypto_box_SEALBYTES, '\0');
    if (crypto_box_seal_open(reinterpret_cast<unsigned char*>(message.data()), box->data(), box->size(), pk->data(),
                             sk->data()) != 0) {
      out.error = "sealed to another key, or altered";
    } else {
      const std::string expected = std::to_string(generation) + "\n" + std::string(field) + "\n";
      if (message.compare(0, expected.size(), expected) != 0) {
        out.error = "sealed for another assignment or field";
      } else {
        out.value = Secret(message.substr(expected.size()));
      }
      sodium_memzero(message.data(), message.size());
    }
  }
  if (sk) sodium_memzero(sk->data(), sk->size());
  return out;
}

}  // namespace runpool::pool
