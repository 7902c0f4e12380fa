// runpoolctl init: creates or updates what a pool needs, idempotently and safely when several run
// at once — the state table and its label index, one pool queue per resource class, and the launch
// template (a new default version only when the rendered data changed).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <json/json.h>

#include "common/aws/dynamodb.h"
#include "common/aws/ec2.h"
#include "common/aws/sqs.h"
#include "controller/launch_template.h"
#include "controller/settings.h"

namespace runpool::controller {

struct InitReport {
  bool table_created = false;
  bool index_added = false;
  std::vector<std::pair<std::string, std::string>> queues;  // name, URL
  std::string template_id;
  std::string template_action;  // "created", "updated", "unchanged"
  int64_t template_version = 0;
  int records_rekeyed = 0;  // records of an older runpool moved to role-bound keys
};


// The table (created if missing) with its by_label index (added with UpdateTable if missing),
// waiting until both are ACTIVE.
void ensure_state_table(const Settings& s, aws::DynamoDbClient& db, Duration wait, InitReport& report);

// Tables written before records were keyed "<instance role id>:<instance id>" hold this pool's
// records under the bare instance id, which the instance policy cannot let an agent reach: each is
// copied to its role-bound key and the old item deleted if unchanged since it was read. Returns
// how many moved. Safe to repeat and to run beside another init.
int migrate_record_keys(const Settings& s, aws::DynamoDbClient& db);

InitReport init_pool(const Settings& s, aws::DynamoDbClient& db, aws::SqsClient& sqs, aws::Ec2Client& ec2,
                     Duration table_wait);

int run_init(const Settings& s, aws::DynamoDbClient& db, aws::SqsClient& sqs, aws::Ec2Client& ec2, std::ostream& out,
             bool json);

Json::Value init_json(const InitReport& r);

}  // namespace runpool::controller
