// A binary's settings as one table: each row is a configuration key (its KeySpec: type, default,
// bounds, help — the reference docs come from it) bound to where its value goes in the binary's
// settings struct. Typed rows take their default from the struct's own initialiser, so a default
// is written once; rows whose value needs parsing or checking carry their own loader. Loading
// runs the rows in order, so a row may rely on the values of the rows above it.
#pragma once

#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/config.h"

namespace runpool {

template <class S>
struct SettingsRow {
  KeySpec spec;
  // Reads the key into the settings (with its checks: Config::reject). Empty: the key is read by
  // the loader after the table, with what it relates to (an environment fallback, another key).
  std::function<void(const Config&, S&)> load;
};

template <class S>
using SettingsTable = std::vector<SettingsRow<S>>;

template <class S>
std::vector<KeySpec> schema_of(const SettingsTable<S>& table) {
  std::vector<KeySpec> out;
  std::set<std::string> seen;
  for (const auto& row : table) {
    if (!seen.insert(row.spec.key).second) throw std::logic_error("settings key '" + row.spec.key + "' is bound twice");
    out.push_back(row.spec);
  }
  return out;
}

// Runs every row's loader over `s`, in the table's order.
template <class S>
void load_rows(const SettingsTable<S>& table, const Config& config, S& s) {
  for (const auto& row : table) {
    if (row.load) row.load(config, s);
  }
}

// `row` followed by `check` (a value's form, a relation to a key above it): Config::reject.
template <class S>
SettingsRow<S> checked(SettingsRow<S> row, std::function<void(const Config&, S&)> check) {
  auto load = std::move(row.load);
  row.load = [load = std::move(load), check = std::move(check)](const Config& c, S& s) {
    load(c, s);
    check(c, s);
  };
  return row;
}

// ---- Typed rows: the default is the member's value in a default-constructed S.

template <class S>
SettingsRow<S> string_row(std::string key, std::string S::*member, std::string help) {
  S defaults{};
  KeySpec spec{std::move(key), KeyType::kString, defaults.*member, std::move(help)};
  std::string k = spec.key;
  return {std::move(spec), [k, member](const Config& c, S& s) { s.*member = c.get_string(k); }};
}

template <class S>
SettingsRow<S> bool_row(std::string key, bool S::*member, std::string help) {
  S defaults{};
  KeySpec spec{std::move(key), KeyType::kBool, defaults.*member ? "true" : "false", std::move(help)};
  std::string k = spec.key;
  return {std::move(spec), [k, member](const Config& c, S& s) { s.*member = c.get_bool(k); }};
}

template <class S>
SettingsRow<S> int_row(std::string key, int S::*member, std::string help, int64_t min, int64_t max) {
  S defaults{};
  KeySpec spec{std::move(key), KeyType::kInt, std::to_string(defaults.*member), std::move(help), min, max};
  std::string k = spec.key;
  return {std::move(spec), [k, member](const Config& c, S& s) { s.*member = static_cast<int>(c.get_int(k)); }};
}

template <class S>
SettingsRow<S> duration_row(std::string key, Duration S::*member, std::string help, Duration min, Duration max) {
  S defaults{};
  KeySpec spec{std::move(key), KeyType::kDuration, format_duration(defaults.*member), std::move(help), min.count(),
               max.count()};
  std::string k = spec.key;
  return {std::move(spec), [k, member](const Config& c, S& s) { s.*member = c.get_duration(k); }};
}

// A duration kept as milliseconds in a nested struct (pool::Timeouts and the like).
template <class S, class At>
SettingsRow<S> millis_row(std::string key, At at, std::string help, Duration min, Duration max) {
  S defaults{};
  KeySpec spec{std::move(key), KeyType::kDuration, format_duration(Duration{at(defaults)}), std::move(help),
               min.count(), max.count()};
  std::string k = spec.key;
  return {std::move(spec), [k, at](const Config& c, S& s) { at(s) = c.get_duration(k).count(); }};
}

// A duration or a count in a nested struct, reached through `at`.
template <class S, class At>
SettingsRow<S> duration_row_at(std::string key, At at, std::string help, Duration min, Duration max) {
  S defaults{};
  KeySpec spec{std::move(key), KeyType::kDuration, format_duration(at(defaults)), std::move(help), min.count(),
               max.count()};
  std::string k = spec.key;
  return {std::move(spec), [k, at](const Config& c, S& s) { at(s) = c.get_duration(k); }};
}

template <class S, class At>
SettingsRow<S> int_row_at(std::string key, At at, std::string help, int64_t min, int64_t max) {
  S defaults{};
  KeySpec spec{std::move(key), KeyType::kInt, std::to_string(at(defaults)), std::move(help), min, max};
  std::string k = spec.key;
  return {std::move(spec), [k, at](const Config& c, S& s) { at(s) = static_cast<int>(c.get_int(k)); }};
}

// A key's former name, still read: its value counts when the current key is not set.
template <class S, class At>
SettingsRow<S> former_duration_name(std::string key, std::string current, At at, Duration min, Duration max) {
  KeySpec spec{std::move(key), KeyType::kDuration, "", "the former name of " + current + " (read when it is not set)",
               min.count(), max.count()};
  std::string k = spec.key;
  return {std::move(spec), [k, current, at](const Config& c, S& s) {
            if (c.has(k) && c.origin(current) == "default") at(s) = c.get_duration(k);
          }};
}

template <class S>
SettingsRow<S> list_row(std::string key, std::vector<std::string> S::*member, std::string help) {
  S defaults{};
  std::string text;
  for (const auto& item : defaults.*member) text += (text.empty() ? "" : ",") + item;
  KeySpec spec{std::move(key), KeyType::kList, std::move(text), std::move(help)};
  std::string k = spec.key;
  return {std::move(spec), [k, member](const Config& c, S& s) { s.*member = c.get_list(k); }};
}

}  // namespace runpool
