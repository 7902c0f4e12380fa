// gtest checks shared by the AWS clients' unit tests (header only): a foreign or broken answer must
// become a clear AwsError "MalformedResponse", never a crash, a silent success or a retry.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "common/aws/aws_error.h"
#include "common/testing/fake_http.h"

namespace runpool::testing {

// Expects `call` to throw an AwsError from `service` coded MalformedResponse whose text mentions `mentions`.
template <class Call>
void expect_malformed(Call&& call, const std::string& service, const std::string& mentions) {
  try {
    call();
    ADD_FAILURE() << "accepted: expected MalformedResponse mentioning '" << mentions << "'";
  } catch (const aws::AwsError& e) {
    EXPECT_EQ(e.code(), "MalformedResponse") << e.what();
    EXPECT_EQ(e.service(), service) << e.what();
    EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos) << e.what() << " does not mention " << mentions;
  }
}

// A call on `Client`, the body of its 200 answer, and what the error must mention.
template <class Client>
struct MalformedCase {
  std::function<void(Client&)> call;
  const char* body;
  const char* mentions;
};

// Runs each case against its one canned answer: MalformedResponse, after exactly one request.
template <class Client>
void expect_malformed_answers(FakeHttp& http, Client& client, const std::string& service,
                              const std::vector<MalformedCase<Client>>& cases) {
  for (const auto& c : cases) {
    SCOPED_TRACE(c.body);
    http.clear();
    http.push(200, c.body);
    expect_malformed([&] { c.call(client); }, service, c.mentions);
    EXPECT_EQ(http.count(), 1u);
  }
}

}  // namespace runpool::testing
