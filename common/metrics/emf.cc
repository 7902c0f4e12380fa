#include "common/metrics/emf.h"

#include <cmath>
#include <set>
#include <stdexcept>

namespace runpool::metrics {
namespace {

void check_name(const std::string& what, const std::string& name) {
  if (name.empty() || name.size() > kMaxNameLength) {
    throw std::invalid_argument(what + " '" + name + "' must be 1-255 characters");
  }
}

// Integral values are written as integers: "3", not "3.0" or "2.9999999999999996".
Json::Value number(double v) {
  constexpr double kMaxExact = 9007199254740992.0;  // 2^53
  if (std::trunc(v) == v && std::fabs(v) <= kMaxExact) return Json::Value(static_cast<Json::Int64>(v));
  return Json::Value(v);
}

// One line of compact JSON; 15 significant digits, so 0.1 is written "0.1".
std::string one_line(const Json::Value& v) {
  Json::StreamWriterBuilder builder;
  builder["indentation"] = "";
  builder["emitUTF8"] = true;
  builder["precision"] = 15;
  return Json::writeString(builder, v);
}

}  // namespace

std::string_view unit_name(Unit unit) {
  switch (unit) {
    case Unit::kNone: return "None";
    case Unit::kCount: return "Count";
    case Unit::kMilliseconds: return "Milliseconds";
    case Unit::kSeconds: return "Seconds";
    case Unit::kPercent: return "Percent";
    case Unit::kBytes: return "Bytes";
  }
  return "None";
}

Event& Event::dimension(std::string name, std::string value) {
  dimensions.emplace_back(std::move(name), std::move(value));
  return *this;
}

Event& Event::add(std::string name, double value, Unit unit) {
  metrics.push_back(Metric{std::move(name), unit, {value}});
  return *this;
}

Event& Event::add_values(std::string name, std::vector<double> values, Unit unit) {
  if (!values.empty()) metrics.push_back(Metric{std::move(name), unit, std::move(values)});
  return *this;
}

Event& Event::property(std::string name, Json::Value value) {
  properties.emplace_back(std::move(name), std::move(value));
  return *this;
}

std::string format_emf(const Event& e) {
  check_name("namespace", e.ns);
  if (e.metrics.empty()) throw std::invalid_argument("an EMF event needs at least one metric");
  if (e.metrics.size() > kMaxMetricsPerDirective) {
    throw std::invalid_argument("an EMF event holds at most 100 metrics, not " + std::to_string(e.metrics.size()));
  }

  Json::Value root(Json::objectValue);
  std::set<std::string> members;  // every root member but _aws: no name may be used twice
  auto claim = [&](const std::string& what, const std::string& name) {
    if (name == "_aws" || !members.insert(name).second) {
      throw std::invalid_argument(what + " '" + name + "' clashes with another member of the event");
    }
  };

  for (const auto& [name, value] : e.dimensions) {
    check_name("dimension", name);
    claim("dimension", name);
    if (value.empty() || value.size() > kMaxDimensionValueLength) {
      throw std::invalid_argument("dimension " + name + ": its value must be 1-1024 characters");
    }
    root[name] = value;
  }
  std::vector<std::vector<std::string>> sets = e.dimension_sets;
  if (sets.empty()) {
    sets.emplace_back();
    for (const auto& d : e.dimensions) sets.back().push_back(d.first);
  }
  Json::Value dims(Json::arrayValue);
  for (const auto& set : sets) {
    if (set.size() > kMaxDimensionsPerSet) throw std::invalid_argument("a dimension set holds at most 30 dimensions");
    Json::Value s(Json::arrayValue);
    for (const auto& name : set) {
      if (!root.isMember(name)) throw std::invalid_argument("dimension set names '" + name + "', which has no value");
      s.append(name);
    }
    dims.append(s);
  }

  Json::Value defs(Json::arrayValue);
  for (const auto& m : e.metrics) {
    check_name("metric", m.name);
    claim("metric", m.name);
    if (m.values.empty() || m.values.size() > kMaxValuesPerMetric) {
      throw std::invalid_argument("metric " + m.name + " needs 1-100 values");
    }
    Json::Value values(Json::arrayValue);
    for (double v : m.values) {
      if (!std::isfinite(v)) throw std::invalid_argument("metric " + m.name + " has a non-finite value");
      values.append(number(v));
    }
    root[m.name] = m.values.size() == 1 ? values[0] : values;
    Json::Value def(Json::objectValue);
    def["Name"] = m.name;
    def["Unit"] = std::string(unit_name(m.unit));
    defs.append(def);
  }

  for (const auto& [name, value] : e.properties) {
    check_name("property", name);
    claim("property", name);
    root[name] = value;
  }

  Json::Value directive(Json::objectValue);
  directive["Namespace"] = e.ns;
  directive["Dimensions"] = dims;
  directive["Metrics"] = defs;
  root["_aws"]["Timestamp"] = static_cast<Json::Int64>(e.timestamp_ms);
  root["_aws"]["CloudWatchMetrics"].append(directive);
  return one_line(root);
}

}  // namespace runpool::metrics
