#include "common/pool/instance_record.h"

#include <array>
#include <utility>

namespace runpool::pool {
namespace {

template <typename E, size_t N>
std::optional<E> find_by_name(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view name) {
  for (const auto& [value, n] : table) {
    if (n == name) return value;
  }
  return std::nullopt;
}

template <typename E, size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& table, E value) {
  for (const auto& [v, n] : table) {
    if (v == value) return n;
  }
  return "unknown";
}

constexpr std::array<std::pair<State, std::string_view>, 7> kStates{{
    {State::kCreated, "created"},
    {State::kClaimed, "claimed"},
    {State::kRunning, "running"},
    {State::kDraining, "draining"},
    {State::kIdle, "idle"},
    {State::kTerminating, "terminating"},
    {State::kTerminated, "terminated"},
}};

constexpr std::array<std::pair<UsageClass, std::string_view>, 2> kUsageClasses{{
    {UsageClass::kSpot, "spot"},
    {UsageClass::kOnDemand, "on-demand"},
}};

constexpr std::array<std::pair<AgentSignal, std::string_view>, 6> kSignals{{
    {AgentSignal::kNone, "none"},
    {AgentSignal::kBooted, "booted"},
    {AgentSignal::kRegistered, "registered"},
    {AgentSignal::kDrained, "drained"},
    {AgentSignal::kFailed, "failed"},
    {AgentSignal::kInterrupted, "interrupted"},
}};

}  // namespace

std::string_view state_name(State s) { return name_of(kStates, s); }
std::optional<State> parse_state(std::string_view name) { return find_by_name(kStates, name); }
bool is_terminal(State s) { return s == State::kTerminated; }

std::string_view usage_class_name(UsageClass u) { return name_of(kUsageClasses, u); }
std::optional<UsageClass> parse_usage_class(std::string_view name) { return find_by_name(kUsageClasses, name); }

std::string_view agent_signal_name(AgentSignal s) { return name_of(kSignals, s); }
std::optional<AgentSignal> parse_agent_signal(std::string_view name) { return find_by_name(kSignals, name); }

}  // namespace runpool::pool
