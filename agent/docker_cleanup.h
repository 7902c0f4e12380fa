// Cleaning the Docker engine between assignments, when jobs may use it (job_privileges = docker).
// The engine's state is taken when an assignment starts (the baseline) and again at its end; the
// plan removes what the job made (containers, images, volumes, networks, build cache) and puts back
// the tags it moved — retagging `ubuntu:latest` to an image of its own is the classic way to poison
// the next tenant. A verification compares the engine with the baseline once the plan has run: what
// cannot be put back (a baseline image deleted, a container of the image's own changed) leaves the
// instance unfit for another tenant. All pure: the Engine API calls live in docker_engine.h.
//
// Access to the Docker socket is root on the host. What a job does as root outside the engine's
// own state (a privileged container writing to /) is beyond any cleaning: such pools are one trust
// domain or never reuse an instance (docs/security.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace runpool::agent {

struct DockerContainer {
  std::string id;
  std::string image_id;
  std::string name;
};

struct DockerImage {
  std::string id;                 // sha256:… of its configuration
  std::vector<std::string> tags;  // "repo:tag", sorted; Docker's "<none>:<none>" left out
  int64_t created = 0;            // seconds since the epoch: a child is never older than its parent
  // The local image it was built on (the Engine API's ParentId): "" for none, and for BuildKit's
  // images, which record no parent. The engine refuses to remove a parent before its children.
  std::string parent = "";
};

struct DockerNetwork {
  std::string id;
  std::string name;
};

struct EngineState {
  std::vector<DockerContainer> containers;
  std::vector<DockerImage> images;
  std::vector<std::string> volumes;  // names
  std::vector<DockerNetwork> networks;
};

// Engine API answers (v1.41: GET /containers/json?all=1, /images/json?all=1, /volumes, /networks)
// into a state; throws JsonError (common/json.h) on a document that is not one.
EngineState parse_engine_state(const std::string& containers_json, const std::string& images_json,
                               const std::string& volumes_json, const std::string& networks_json);

// The baseline as the agent keeps it on disk between an assignment's start and its clean.
std::string encode_engine_state(const EngineState& state);
EngineState decode_engine_state(const std::string& text);  // throws JsonError

enum class DockerActionKind {
  kRemoveContainer,  // force, with its anonymous volumes
  kTag,              // put a baseline tag back on its baseline image
  kUntag,            // a tag the job added to a baseline image
  kRemoveImage,      // an image the job pulled, built, imported or committed
  kRemoveVolume,
  kRemoveNetwork,
  kPruneBuildCache,  // all of it: the builder's cache outlives images
};

struct DockerAction {
  DockerActionKind kind;
  std::string target;  // container or image id, tag ("repo:tag"), volume name, network id
  std::string image;   // kTag: the image the tag goes back to
  std::string why;     // for logs
};

struct DockerCleanupPlan {
  std::vector<DockerAction> actions;  // in order: containers, tags, images, volumes, networks, cache
  std::vector<std::string> damage;    // what no action can put back
};

// The networks every engine has; never the job's.
bool predefined_network(const std::string& name);

// What of the assignment's start outlives it: the images with their tags (content-addressed: a job
// cannot change one without changing its id) and the networks. Containers and volumes never do,
// the image's own included: a job with the engine can change what is inside them (`docker exec`,
// a write into the volume) and nothing vouches for that, so the cleaning removes them all.
EngineState lasting_part(const EngineState& baseline);

// `baseline` nullopt: the agent has no record of the assignment's start (its state file was lost):
// everything that can be made again goes, and the images cannot be vouched for.
DockerCleanupPlan plan_docker_cleanup(const std::optional<EngineState>& baseline, const EngineState& now);

// How `now` differs from `baseline` (empty: the engine is as the assignment found it). Containers,
// images with their tags, volumes and networks are compared; the build cache is not listed. After a
// cleaning, compare with lasting_part(baseline).
std::vector<std::string> engine_differences(const EngineState& baseline, const EngineState& now);

// "repo:tag" into its repository and tag (the tag is after the last ':' that follows the last '/',
// so a registry's port stays in the repository).
std::pair<std::string, std::string> split_image_tag(const std::string& ref);

}  // namespace runpool::agent
