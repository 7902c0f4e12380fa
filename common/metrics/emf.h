// Metrics as CloudWatch embedded-metric-format (EMF) events: one JSON object per line, whose
// `_aws.CloudWatchMetrics` directive tells CloudWatch Logs which root members are dimensions and
// which are metrics (with their units). CloudWatch turns such a log line into metric data points
// with no metrics API call — why runpool uses it (docs/observability.md). Pure: building and
// formatting an event does no I/O; sinks (sink.h) decide where the line goes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <json/json.h>

namespace runpool::metrics {

// The CloudWatch units runpool uses (a subset of CloudWatch's StandardUnit).
enum class Unit { kNone, kCount, kMilliseconds, kSeconds, kPercent, kBytes };
std::string_view unit_name(Unit unit);  // "Count", "Milliseconds", …

struct Metric {
  std::string name;
  Unit unit = Unit::kCount;
  std::vector<double> values;  // one data point each (EMF allows up to 100 per metric)
};

struct Event {
  std::string ns;  // the CloudWatch namespace
  // Dimension names and values, in order. With `dimension_sets` empty, the metrics are published
  // under one set holding every dimension; else under each listed set (names from `dimensions`).
  std::vector<std::pair<std::string, std::string>> dimensions;
  std::vector<std::vector<std::string>> dimension_sets;
  std::vector<Metric> metrics;
  int64_t timestamp_ms = 0;  // epoch milliseconds
  // Extra root members, searchable in Logs Insights but not metrics (a label, an error).
  std::vector<std::pair<std::string, Json::Value>> properties;

  Event& dimension(std::string name, std::string value);
  Event& add(std::string name, double value, Unit unit = Unit::kCount);
  Event& add_values(std::string name, std::vector<double> values, Unit unit);  // skipped when empty
  Event& property(std::string name, Json::Value value);
};

// Limits from the EMF specification and CloudWatch.
inline constexpr size_t kMaxMetricsPerDirective = 100;
inline constexpr size_t kMaxValuesPerMetric = 100;
inline constexpr size_t kMaxDimensionsPerSet = 30;
inline constexpr size_t kMaxNameLength = 255;
inline constexpr size_t kMaxDimensionValueLength = 1024;

// The event as one line of compact JSON, without a trailing newline. Throws std::invalid_argument
// saying what is wrong: an empty or over-long namespace or name, a metric without values or with
// a non-finite one, a dimension set naming an unknown dimension, two root members of one name, an
// event with no metric, or more than a limit above allows.
std::string format_emf(const Event& event);

}  // namespace runpool::metrics
