#include "common/pool/lease_store.h"

#include <algorithm>
#include <stdexcept>

#include "common/pool/record_codec.h"

namespace runpool::pool {
namespace {

using aws::AttributeValue;

constexpr const char* kHolder = "lease_holder";
constexpr const char* kGeneration = "lease_generation";
constexpr const char* kExpires = "lease_expires_ms";

aws::Item lease_key(const std::string& name) {
  if (name.empty()) throw std::invalid_argument("a lease needs a name");
  return {{attr::kInstanceId, AttributeValue::string(std::string(kLeaseKeyPrefix) + name)}};
}

Lease lease_of(const std::string& name, const aws::Item& item) {
  auto field = [&](const char* attribute) -> const AttributeValue& {
    auto it = item.find(attribute);
    if (it == item.end()) throw std::runtime_error("lease " + name + " has no " + attribute);
    return it->second;
  };
  return Lease{name, field(kHolder).as_string(), field(kGeneration).as_int(), field(kExpires).as_int()};
}

aws::Item lease_item(const Lease& l) {
  aws::Item item = lease_key(l.name);
  item[kHolder] = AttributeValue::string(l.holder);
  item[kGeneration] = AttributeValue::number(l.generation);
  item[kExpires] = AttributeValue::number(l.expires_ms);
  return item;
}

}  // namespace

std::optional<Lease> MemoryLeaseStore::get(const std::string& name) {
  std::lock_guard lock(mu_);
  auto it = leases_.find(name);
  if (it == leases_.end()) return std::nullopt;
  return it->second;
}

bool MemoryLeaseStore::create(const Lease& lease) {
  if (lease.name.empty()) throw std::invalid_argument("a lease needs a name");
  std::lock_guard lock(mu_);
  return leases_.emplace(lease.name, lease).second;
}

bool MemoryLeaseStore::replace(const Lease& next, int64_t read_generation) {
  std::lock_guard lock(mu_);
  auto it = leases_.find(next.name);
  if (it == leases_.end() || it->second.generation != read_generation) return false;
  it->second = next;
  return true;
}

std::vector<Lease> MemoryLeaseStore::list(const std::string& prefix) {
  std::lock_guard lock(mu_);
  std::vector<Lease> out;
  for (auto it = leases_.lower_bound(prefix); it != leases_.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    out.push_back(it->second);
  }
  return out;
}

DynamoLeaseStore::DynamoLeaseStore(aws::DynamoDbClient& db, std::string table) : db_(db), table_(std::move(table)) {}

std::optional<Lease> DynamoLeaseStore::get(const std::string& name) {
  auto item = db_.get_item({.table = table_, .key = lease_key(name), .consistent_read = true});
  if (!item) return std::nullopt;
  return lease_of(name, *item);
}

bool DynamoLeaseStore::create(const Lease& lease) {
  aws::PutItemRequest req;
  req.table = table_;
  req.item = lease_item(lease);
  req.condition = "attribute_not_exists(#k)";
  req.names = {{"#k", attr::kInstanceId}};
  return db_.put_item(req).applied;
}

bool DynamoLeaseStore::replace(const Lease& next, int64_t read_generation) {
  aws::UpdateItemRequest req;
  req.table = table_;
  req.key = lease_key(next.name);
  req.update = "SET #h = :h, #g = :g, #e = :e";
  req.condition = "#g = :read";
  req.names = {{"#h", kHolder}, {"#g", kGeneration}, {"#e", kExpires}};
  req.values = {{":h", AttributeValue::string(next.holder)},
                {":g", AttributeValue::number(next.generation)},
                {":e", AttributeValue::number(next.expires_ms)},
                {":read", AttributeValue::number(read_generation)}};
  return db_.update_item(req).applied;
}

// A scan: lease items are few and the table is the pool's (hundreds of items), so a filtered scan
// costs what status's own record scan does; a key-ordered read would need an index for leases.
std::vector<Lease> DynamoLeaseStore::list(const std::string& prefix) {
  aws::ScanRequest req;
  req.table = table_;
  req.filter = "begins_with(#k, :p)";
  req.names = {{"#k", attr::kInstanceId}};
  req.values = {{":p", AttributeValue::string(std::string(kLeaseKeyPrefix) + prefix)}};
  req.consistent_read = true;
  std::vector<Lease> out;
  for (const aws::Item& item : db_.scan_all(req)) {
    const std::string key = item.at(attr::kInstanceId).as_string();
    out.push_back(lease_of(key.substr(kLeaseKeyPrefix.size()), item));
  }
  std::sort(out.begin(), out.end(), [](const Lease& a, const Lease& b) { return a.name < b.name; });
  return out;
}

}  // namespace runpool::pool
