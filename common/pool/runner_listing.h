// How a refresh pass learns GitHub's runners without listing them all every time. Listing every
// runner costs one request per 100 runners; a pass that only needs the runners its records name
// (a ghost is a runner whose record is idle, terminating or terminated) asks for those by id
// instead. The agent's failed or drained word is confirmed against every runner of its instance,
// by name and of any generation, and the record's runner_id is the agent's to write: a record
// carrying that word makes the pass list in full after its scan, keeping only runners whose
// instance has a record (a runner with none may belong to a record written after the scan). The full listing,
// which alone finds runners with no record at all, runs on a slower cadence kept in a marker item
// of the state table (a lease-store item, so record readers skip it): its expires_ms holds when the
// last full listing began, and the pass that lists writes it conditionally on the generation it
// read, so of two passes that find a listing due only one lists.
//
// Between full listings, a record's runner is looked up only when the record changed (its
// state_since_ms) since shortly before the last full listing began: an older idle, terminating or
// terminated record had its runner seen by that listing already.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/pool/instance_record.h"
#include "common/pool/lease.h"
#include "common/pool/refresh_plan.h"

namespace runpool::pool {

struct ListingPolicy {
  // One full listing at most this often. At 10,000 runners (100 pages) every 30 minutes: 200
  // GitHub requests an hour, a fifth of a 1,000-an-hour budget.
  int64_t interval_ms = 30 * 60'000;
  // Records changed this long before the last full listing began are looked up too: a runner
  // registered or a record written while that listing was paging may have been missed by it.
  int64_t overlap_ms = 5 * 60'000;
};

enum class ListingMode {
  kFull,  // list every runner (ghosts with no record too)
  kById,  // look up only the runners `runners_to_look_up` names
};

struct ListingDecision {
  ListingMode mode = ListingMode::kFull;
  // kFull outside a dry run: the marker to write first, where there is none (create) or where the
  // generation is still `read_generation`. A write that loses means another pass lists: this one
  // falls back to kById with `since_ms`.
  std::optional<Lease> write;
  bool create = false;
  int64_t read_generation = 0;
  int64_t since_ms = 0;  // kById (or the fallback): records changed at or after this are looked up
  std::string why;
};

// "runner-listing/<pool>"
std::string runner_listing_marker(const std::string& pool);

ListingDecision decide_runner_listing(const std::string& pool, const std::optional<Lease>& marker, int64_t now_ms,
                                      const std::string& holder, bool dry_run, const ListingPolicy& policy);

// Whether one of `pool`'s records carries the agent's word that refresh confirms against GitHub's
// runners before acting on it: failed in an assigned state, or drained while draining.
bool needs_full_listing(const std::vector<InstanceRecord>& records, const std::string& pool);

// What a pass whose full listing failed writes over the marker it wrote (conditionally on that
// write's generation): a listing due at once, so the next pass lists instead of waiting out the
// interval on a listing that never happened.
Lease listing_given_back(const Lease& written);

// The runner ids a kById pass asks GitHub for, ascending and without repeats: of `pool`'s records
// naming a runner, those idle, terminating or terminated that changed at or after `since_ms`.
std::vector<int64_t> runners_to_look_up(const std::vector<InstanceRecord>& records, const std::string& pool,
                                        int64_t since_ms);

// Of a listing taken after the scan, the runners whose instance has one of `pool`'s records (other
// pools' runners are dropped too: refresh never touches them).
std::vector<RunnerView> keep_recorded(const std::vector<RunnerView>& runners, const std::vector<InstanceRecord>& records,
                                      const std::string& pool);

}  // namespace runpool::pool
