// provision's report as text, JSON, step outputs and a step-summary section (controller/provision.h).
#include <fmt/format.h>

#include <algorithm>

#include "common/json.h"
#include "controller/provision.h"

namespace runpool::controller {
namespace {

std::string seconds_text(int64_t ms) { return fmt::format("{:.1f}s", static_cast<double>(ms) / 1000.0); }

}  // namespace

int ProvisionReport::warm() const {
  return static_cast<int>(std::count_if(instances.begin(), instances.end(), [](const auto& i) { return i.warm; }));
}
int ProvisionReport::launched() const { return static_cast<int>(instances.size()) - warm(); }

std::string provision_text(const ProvisionReport& r) {
  std::string out;
  if (r.ok) {
    const std::string how_many = static_cast<int>(r.instances.size()) < r.requested
                                     ? fmt::format("{} of {}", r.instances.size(), r.requested)
                                     : std::to_string(r.instances.size());
    out += fmt::format("provisioned {} runner(s) for label {} (class {}): {} warm, {} launched, running after {}\n",
                       how_many, r.label, r.resource_class, r.warm(), r.launched(), seconds_text(r.elapsed_ms));
  } else {
    out += fmt::format("provision {} failed after {}: {}\n", r.label, seconds_text(r.elapsed_ms), r.error);
    if (!r.instances.empty()) out += "cleaned up (claimed instances drain back to the pool, launched ones terminate):\n";
  }
  for (const auto& i : r.instances) {
    out += fmt::format("  {:<20} {:<14} {:<10} {:<9} {}\n", i.instance_id, i.instance_type,
                       pool::usage_class_name(i.usage), i.warm ? "warm" : "launched",
                       i.running_after_ms ? "running after " + seconds_text(i.running_after_ms) : "");
  }
  if (!r.dropped.empty()) out += "let go (claimed ones drain back to the pool, launched ones terminate):\n";
  for (const auto& d : r.dropped) {
    out += fmt::format("  {:<20} {:<9} {}{}\n", d.instance_id, d.warm ? "warm" : "launched", d.why,
                       d.kept ? "; kept for inspection (keep_failed)" : "");
  }
  return out;
}

Json::Value provision_json(const ProvisionReport& r) {
  Json::Value v(Json::objectValue);
  v["ok"] = r.ok;
  if (!r.ok) v["error"] = r.error;
  v["label"] = r.label;
  v["resource_class"] = r.resource_class;
  v["requested"] = r.requested;
  v["min_count"] = r.min_count;
  v["warm"] = r.warm();
  v["launched"] = r.launched();
  v["elapsed_ms"] = static_cast<Json::Int64>(r.elapsed_ms);
  v["instances"] = Json::Value(Json::arrayValue);
  for (const auto& i : r.instances) {
    Json::Value j(Json::objectValue);
    j["instance_id"] = i.instance_id;
    j["instance_type"] = i.instance_type;
    j["usage_class"] = std::string(pool::usage_class_name(i.usage));
    j["source"] = i.warm ? "warm" : "launched";
    j["generation"] = static_cast<Json::Int64>(i.generation);
    j["running_after_ms"] = static_cast<Json::Int64>(i.running_after_ms);
    v["instances"].append(j);
  }
  v["dropped"] = Json::Value(Json::arrayValue);
  for (const auto& d : r.dropped) {
    Json::Value j(Json::objectValue);
    j["instance_id"] = d.instance_id;
    j["source"] = d.warm ? "warm" : "launched";
    j["why"] = d.why;
    j["kept"] = d.kept;
    v["dropped"].append(j);
  }
  return v;
}

Outputs provision_outputs(const ProvisionReport& r) {
  std::string ids;
  for (const auto& i : r.instances) ids += (ids.empty() ? "" : " ") + i.instance_id;
  return {{"label", r.label},
          {"instance-ids", ids},
          {"warm", std::to_string(r.warm())},
          {"launched", std::to_string(r.launched())}};
}

std::string provision_summary(const ProvisionReport& r) {
  std::string out = "### runpool provision `" + markdown_cell(r.label) + "`\n\n";
  if (!r.ok) out += "**Failed:** " + markdown_code(r.error) + "\n\n";
  if (!r.instances.empty()) {
    out += "| instance | type | usage | source | running after |\n|---|---|---|---|---|\n";
    for (const auto& i : r.instances) {
      out += fmt::format("| {} | {} | {} | {} | {} |\n", markdown_cell(i.instance_id), markdown_cell(i.instance_type),
                         pool::usage_class_name(i.usage), i.warm ? "warm" : "launched",
                         i.running_after_ms ? seconds_text(i.running_after_ms) : "–");
    }
    out += "\n";
  }
  if (r.ok) {
    out += fmt::format("{} warm, {} launched ({}); {} running after {}.\n\n", r.warm(), r.launched(),
                       markdown_cell(r.resource_class),
                       static_cast<int>(r.instances.size()) < r.requested
                           ? fmt::format("{} of {}", r.instances.size(), r.requested)
                           : std::string("all"),
                       seconds_text(r.elapsed_ms));
  }
  if (!r.dropped.empty()) {
    out += "Let go:\n\n";
    for (const auto& d : r.dropped) {
      out += "- " + markdown_cell(d.instance_id) + ": " + markdown_code(d.why) +
             (d.kept ? " (kept for inspection: keep_failed)" : "") + "\n";
    }
    out += "\n";
  }
  return out;
}

}  // namespace runpool::controller
