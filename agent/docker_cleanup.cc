#include "agent/docker_cleanup.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/json.h"

namespace runpool::agent {
namespace {

// Why a container or volume the assignment found is removed all the same (lasting_part).
constexpr const char* kOlderThanTheAssignment = " was there when the assignment began, and a job may have changed it";

const Json::Value& array_of(const Json::Value& v, const std::string& what) {
  if (!v.isArray()) throw JsonError(what + ": not a JSON array");
  return v;
}

std::vector<std::string> string_list(const Json::Value& obj, const char* key, const std::string& what) {
  std::vector<std::string> out;
  if (!obj.isMember(key) || obj[key].isNull()) return out;  // the Engine API gives null for none
  const Json::Value& a = obj[key];
  if (!a.isArray()) throw JsonError(what + ": field '" + key + "' is not an array");
  for (const auto& e : a) {
    if (!e.isString()) throw JsonError(what + ": field '" + key + "' holds a non-string");
    out.push_back(e.asString());
  }
  return out;
}

std::vector<std::string> real_tags(std::vector<std::string> tags) {
  std::erase(tags, "<none>:<none>");
  std::sort(tags.begin(), tags.end());
  tags.erase(std::unique(tags.begin(), tags.end()), tags.end());
  return tags;
}

std::string short_id(const std::string& id) {
  std::string s = id.rfind("sha256:", 0) == 0 ? id.substr(7) : id;
  return s.substr(0, 12);
}

std::string tag_list(const std::vector<std::string>& tags) {
  std::string t;
  for (const auto& tag : tags) t += (t.empty() ? "" : ", ") + tag;
  return t;
}

std::string describe(const DockerImage& i) {
  if (i.tags.empty()) return "image " + short_id(i.id);
  return "image " + short_id(i.id) + " (" + tag_list(i.tags) + ")";
}

}  // namespace

EngineState parse_engine_state(const std::string& containers_json, const std::string& images_json,
                               const std::string& volumes_json, const std::string& networks_json) {
  EngineState s;
  const std::string cw = "Docker container list";
  const Json::Value containers = parse_json(containers_json, cw);  // named: a range-for would not keep a temporary
  for (const auto& c : array_of(containers, cw)) {
    DockerContainer d;
    d.id = require_string(c, "Id", cw);
    d.image_id = optional_string(c, "ImageID", cw).value_or("");
    auto names = string_list(c, "Names", cw);
    if (!names.empty()) d.name = names.front().starts_with("/") ? names.front().substr(1) : names.front();
    s.containers.push_back(std::move(d));
  }
  const std::string iw = "Docker image list";
  const Json::Value images = parse_json(images_json, iw);
  for (const auto& i : array_of(images, iw)) {
    DockerImage d;
    d.id = require_string(i, "Id", iw);
    d.tags = real_tags(string_list(i, "RepoTags", iw));
    d.created = optional_int(i, "Created", iw).value_or(0);
    d.parent = optional_string(i, "ParentId", iw).value_or("");
    s.images.push_back(std::move(d));
  }
  const std::string vw = "Docker volume list";
  const Json::Value volumes = parse_json(volumes_json, vw);
  if (!volumes.isObject()) throw JsonError(vw + ": not a JSON object");
  if (volumes.isMember("Volumes") && !volumes["Volumes"].isNull()) {
    for (const auto& v : array_of(volumes["Volumes"], vw)) s.volumes.push_back(require_string(v, "Name", vw));
  }
  const std::string nw = "Docker network list";
  const Json::Value networks = parse_json(networks_json, nw);
  for (const auto& n : array_of(networks, nw)) {
    s.networks.push_back({require_string(n, "Id", nw), require_string(n, "Name", nw)});
  }
  return s;
}

std::string encode_engine_state(const EngineState& state) {
  Json::Value root(Json::objectValue);
  root["version"] = 1;
  Json::Value& cs = root["containers"] = Json::Value(Json::arrayValue);
  for (const auto& c : state.containers) {
    Json::Value v;
    v["id"] = c.id;
    v["image"] = c.image_id;
    v["name"] = c.name;
    cs.append(v);
  }
  Json::Value& is = root["images"] = Json::Value(Json::arrayValue);
  for (const auto& i : state.images) {
    Json::Value v;
    v["id"] = i.id;
    v["created"] = Json::Int64(i.created);
    v["tags"] = Json::Value(Json::arrayValue);
    for (const auto& t : i.tags) v["tags"].append(t);
    if (!i.parent.empty()) v["parent"] = i.parent;
    is.append(v);
  }
  Json::Value& vs = root["volumes"] = Json::Value(Json::arrayValue);
  for (const auto& v : state.volumes) vs.append(v);
  Json::Value& ns = root["networks"] = Json::Value(Json::arrayValue);
  for (const auto& n : state.networks) {
    Json::Value v;
    v["id"] = n.id;
    v["name"] = n.name;
    ns.append(v);
  }
  return write_json(root);
}

EngineState decode_engine_state(const std::string& text) {
  const std::string w = "Docker engine baseline";
  const Json::Value root = parse_json(text, w);
  if (!root.isObject() || require_int(root, "version", w) != 1) throw JsonError(w + ": not version 1");
  EngineState s;
  for (const auto& c : array_of(require_member(root, "containers", w), w)) {
    s.containers.push_back({require_string(c, "id", w), require_string(c, "image", w), require_string(c, "name", w)});
  }
  for (const auto& i : array_of(require_member(root, "images", w), w)) {
    s.images.push_back({require_string(i, "id", w), real_tags(string_list(i, "tags", w)), require_int(i, "created", w),
                        optional_string(i, "parent", w).value_or("")});
  }
  for (const auto& v : array_of(require_member(root, "volumes", w), w)) {
    if (!v.isString()) throw JsonError(w + ": a volume is not a name");
    s.volumes.push_back(v.asString());
  }
  for (const auto& n : array_of(require_member(root, "networks", w), w)) {
    s.networks.push_back({require_string(n, "id", w), require_string(n, "name", w)});
  }
  return s;
}

bool predefined_network(const std::string& name) { return name == "bridge" || name == "host" || name == "none"; }

std::pair<std::string, std::string> split_image_tag(const std::string& ref) {
  const auto colon = ref.rfind(':');
  const auto slash = ref.rfind('/');
  if (colon == std::string::npos || (slash != std::string::npos && colon < slash)) return {ref, "latest"};
  return {ref.substr(0, colon), ref.substr(colon + 1)};
}

EngineState lasting_part(const EngineState& baseline) {
  EngineState s = baseline;
  s.containers.clear();
  s.volumes.clear();
  return s;
}

DockerCleanupPlan plan_docker_cleanup(const std::optional<EngineState>& baseline, const EngineState& now) {
  DockerCleanupPlan p;
  const EngineState empty;
  const EngineState& base = baseline ? *baseline : empty;

  std::set<std::string> base_containers;
  for (const auto& c : base.containers) base_containers.insert(c.id);
  for (const auto& c : now.containers) {
    p.actions.push_back({DockerActionKind::kRemoveContainer, c.id, "",
                         "container " + c.name + (base_containers.count(c.id) ? kOlderThanTheAssignment : " was made by the job")});
  }

  std::map<std::string, const DockerImage*> now_images;       // id → image
  std::map<std::string, std::string> now_tag_owner;           // tag → image id
  for (const auto& i : now.images) {
    now_images[i.id] = &i;
    for (const auto& t : i.tags) now_tag_owner[t] = i.id;
  }
  std::set<std::string> base_image_ids;
  std::map<std::string, std::set<std::string>> base_tags;  // image id → its tags at the start
  for (const auto& b : base.images) {
    base_image_ids.insert(b.id);
    base_tags[b.id].insert(b.tags.begin(), b.tags.end());
    if (!now_images.count(b.id)) {
      p.damage.push_back(describe(b) + " was removed");
      continue;
    }
    for (const auto& t : b.tags) {
      auto owner = now_tag_owner.find(t);
      if (owner == now_tag_owner.end() || owner->second != b.id) {
        p.actions.push_back({DockerActionKind::kTag, t, b.id,
                             owner == now_tag_owner.end() ? "tag " + t + " was removed"
                                                          : "tag " + t + " was moved to image " + short_id(owner->second)});
      }
    }
  }
  for (const auto& i : now.images) {
    if (!base_image_ids.count(i.id)) continue;
    for (const auto& t : i.tags) {
      if (!base_tags[i.id].count(t)) {
        p.actions.push_back({DockerActionKind::kUntag, t, i.id, "tag " + t + " was added by the job"});
      }
    }
  }
  // A child image goes before the parent it was built on: the engine refuses the parent first.
  // Deepest first along ParentId among the job's images, then newest first (a child is never
  // older than its parent; BuildKit's images have no ParentId and never block each other).
  std::vector<const DockerImage*> made;
  for (const auto& i : now.images) {
    if (!base_image_ids.count(i.id)) made.push_back(&i);
  }
  std::map<std::string, int> depth;  // the job's image → how many of the job's images it was built on
  for (const DockerImage* i : made) {
    int d = 0;
    std::set<std::string> seen{i->id};  // a malformed answer's parent loop ends the walk
    for (auto up = now_images.find(i->parent); up != now_images.end() && !base_image_ids.count(up->first) &&
                                               seen.insert(up->first).second;
         up = now_images.find(up->second->parent)) {
      ++d;
    }
    depth[i->id] = d;
  }
  std::stable_sort(made.begin(), made.end(), [&](const DockerImage* a, const DockerImage* b) {
    if (depth[a->id] != depth[b->id]) return depth[a->id] > depth[b->id];
    return a->created > b->created;
  });
  for (const DockerImage* i : made) {
    p.actions.push_back({DockerActionKind::kRemoveImage, i->id, "", describe(*i) + " was made by the job"});
  }
  if (!baseline && !now.images.empty()) {
    p.damage.push_back("the engine's images cannot be vouched for: there is no record of them from the assignment's start");
  }

  std::set<std::string> base_volumes(base.volumes.begin(), base.volumes.end());
  for (const auto& v : now.volumes) {
    p.actions.push_back({DockerActionKind::kRemoveVolume, v, "",
                         "volume " + v + (base_volumes.count(v) ? kOlderThanTheAssignment : " was made by the job")});
  }
  std::set<std::string> base_networks;
  for (const auto& n : base.networks) base_networks.insert(n.id);
  for (const auto& n : now.networks) {
    if (!base_networks.count(n.id) && !predefined_network(n.name)) {
      p.actions.push_back({DockerActionKind::kRemoveNetwork, n.id, "", "network " + n.name + " was made by the job"});
    }
  }
  p.actions.push_back({DockerActionKind::kPruneBuildCache, "", "", "the build cache"});
  return p;
}

std::vector<std::string> engine_differences(const EngineState& baseline, const EngineState& now) {
  std::vector<std::string> out;
  auto by_id = [](const auto& list) {
    std::map<std::string, const std::decay_t<decltype(list.front())>*> m;
    for (const auto& e : list) m[e.id] = &e;
    return m;
  };
  const auto bc = by_id(baseline.containers), nc = by_id(now.containers);
  for (const auto& [id, c] : bc) {
    auto it = nc.find(id);
    if (it == nc.end()) out.push_back("container " + c->name + " is gone");
    else if (it->second->image_id != c->image_id) out.push_back("container " + c->name + " runs another image");
  }
  for (const auto& [id, c] : nc) {
    if (!bc.count(id)) out.push_back("container " + c->name + " is left");
  }
  const auto bi = by_id(baseline.images), ni = by_id(now.images);
  for (const auto& [id, i] : bi) {
    auto it = ni.find(id);
    if (it == ni.end()) out.push_back(describe(*i) + " is gone");
    else if (it->second->tags != i->tags) {
      out.push_back(describe(*i) + " is now tagged " + (it->second->tags.empty() ? "nothing" : tag_list(it->second->tags)));
    }
  }
  for (const auto& [id, i] : ni) {
    if (!bi.count(id)) out.push_back(describe(*i) + " is left");
  }
  std::set<std::string> bv(baseline.volumes.begin(), baseline.volumes.end()), nv(now.volumes.begin(), now.volumes.end());
  for (const auto& v : bv) {
    if (!nv.count(v)) out.push_back("volume " + v + " is gone");
  }
  for (const auto& v : nv) {
    if (!bv.count(v)) out.push_back("volume " + v + " is left");
  }
  const auto bn = by_id(baseline.networks), nn = by_id(now.networks);
  for (const auto& [id, n] : bn) {
    if (!nn.count(id)) out.push_back("network " + n->name + " is gone");
  }
  for (const auto& [id, n] : nn) {
    if (!bn.count(id)) out.push_back("network " + n->name + " is left");
  }
  return out;
}

}  // namespace runpool::agent
