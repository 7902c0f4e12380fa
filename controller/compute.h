// EC2 as the controller uses it: launch (CreateFleet instant), terminate, and find the pool's
// instances by their launch tags. Behind an interface for tests; Ec2Compute is the real one.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/aws/ec2_types.h"

namespace runpool::controller {

// Tags every instance carries from launch on, so an instance whose record was never written is
// still found (refresh) and attributable.
inline constexpr const char* kTagPool = "runpool:pool";
inline constexpr const char* kTagTable = "runpool:table";
inline constexpr const char* kTagLabel = "runpool:label";
inline constexpr const char* kTagResourceClass = "runpool:resource-class";

// Some instances of a terminate() call were not terminated — EC2 refused them (termination
// protection: OperationNotPermitted), or an error stopped the call after that — while every other
// id was terminated (or was gone already). Thrown after the rest was done, so a caller that
// catches only std::exception still sees a failure.
class TerminateError : public std::runtime_error {
 public:
  explicit TerminateError(std::map<std::string, std::string> not_terminated)
      : std::runtime_error(describe(not_terminated)), not_terminated_(std::move(not_terminated)) {}
  // Instance id → why it was not terminated (EC2's error).
  const std::map<std::string, std::string>& not_terminated() const { return not_terminated_; }

 private:
  static std::string describe(const std::map<std::string, std::string>& m) {
    std::string s = std::to_string(m.size()) + " instance(s) not terminated";
    for (const auto& [id, why] : m) s += "; " + id + ": " + why;
    return s;
  }
  std::map<std::string, std::string> not_terminated_;
};

class Compute {
 public:
  virtual ~Compute() = default;
  // Partial fulfilment is a result; a whole-call failure (capacity included) is an AwsError.
  virtual aws::CreateFleetResult create_fleet(const aws::CreateFleetRequest& request) = 0;
  // Terminates; ids EC2 no longer knows are not an error. One instance EC2 will not terminate
  // does not keep the others up: they are terminated, then TerminateError names it and why.
  virtual void terminate(const std::vector<std::string>& instance_ids) = 0;
  // The given instances as EC2 sees them (missing ones are left out).
  virtual std::vector<aws::Instance> describe(const std::vector<std::string>& instance_ids) = 0;
  // Every instance tagged for this pool and table, in any state but terminated (all pages).
  virtual std::vector<aws::Instance> pool_instances() = 0;
  // Sets the runpool:label tag of instances claimed for a new assignment, so cost reports follow
  // who uses a reused instance (the launch tag names the label it was launched for).
  virtual void tag_label(const std::vector<std::string>& instance_ids, const std::string& label) = 0;
  // This pool's pending or running instances launched for one assignment label (its launch tag):
  // what a provision that died between CreateFleet's answer and its record writes left behind.
  virtual std::vector<aws::Instance> label_instances(const std::string& label) {
    std::vector<aws::Instance> out;
    for (auto& i : pool_instances()) {
      if (i.tag(kTagLabel) == label && (i.state.name == "pending" || i.state.name == "running")) out.push_back(i);
    }
    return out;
  }
};

}  // namespace runpool::controller
