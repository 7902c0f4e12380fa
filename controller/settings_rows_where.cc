// Settings: where the pool lives (AWS) and the GitHub it serves.
#include "controller/settings_rows.h"

#include <filesystem>
#include <stdexcept>

#include "common/cloud_init/agent_key_bounds.h"
#include "common/github/endpoint.h"
#include "common/pool/record_key.h"
#include "controller/user_data.h"

namespace runpool::controller::settings_rows {

std::vector<Row> where_rows() {
  using K = KeyType;
  return {
      // Where the pool lives.
      checked<Settings>(string_row("table", &Settings::table, "the DynamoDB state table (several pools may share one)"),
                        [](const Config& c, Settings& s) {
                          if (s.table.size() < 3 || s.table.size() > 255 ||
                              !std::all_of(s.table.begin(), s.table.end(),
                                           [](char ch) { return is_name_char(ch) || ch == '.'; })) {
                            c.reject("table", "'" + s.table + "' must be 3–255 letters, digits, '-', '_' or '.'");
                          }
                        }),
      checked<Settings>(string_row("pool", &Settings::pool, "the pool's name: tags, queue names and runner names carry it"),
                        [](const Config& c, Settings& s) {
                          if (s.pool.empty() || s.pool.size() > 40 ||
                              !std::all_of(s.pool.begin(), s.pool.end(), is_name_char)) {
                            c.reject("pool", "'" + s.pool + "' must be 1–40 letters, digits, '-' or '_'");
                          }
                        }),
      string_row("region", &Settings::region, "AWS region (else AWS_REGION / AWS_DEFAULT_REGION)"),
      endpoint_row("endpoint_dynamodb", &Settings::endpoint_dynamodb,
                   "DynamoDB endpoint URL (else AWS_ENDPOINT_URL_DYNAMODB, else AWS's)"),
      endpoint_row("endpoint_sqs", &Settings::endpoint_sqs, "SQS endpoint URL (else AWS_ENDPOINT_URL_SQS, else AWS's)"),
      endpoint_row("endpoint_ec2", &Settings::endpoint_ec2, "EC2 endpoint URL (else AWS_ENDPOINT_URL_EC2, else AWS's)"),
      duration_row("aws_timeout", &Settings::aws_timeout, "timeout of one AWS request", 100 * kMs, 10 * kMin),
      int_row("aws_max_attempts", &Settings::aws_max_attempts, "attempts per AWS call, the first included", 1, 20),
      // GitHub. The URLs are resolved after the table, with a workflow's own as the fallback.
      {{"github_api_url", K::kString, "https://api.github.com",
        "GitHub REST API base (GHES: https://HOST/api/v3); when neither it nor github_server_url is set, a "
        "workflow's GITHUB_API_URL"},
       {}},
      {{"github_server_url", K::kString, "",
        "GitHub web URL runners register with (default: derived from github_api_url; when neither is set, a "
        "workflow's GITHUB_SERVER_URL)"},
       {}},
      checked<Settings>(
          string_row("github_owner", &Settings::github_owner,
                     "whose runners: \"owner/repo\", an organization, or \"enterprise:SLUG\" (an enterprise's runners: a "
                     "classic PAT with manage_runners:enterprise; GitHub Apps cannot manage them)"),
          [](const Config& c, Settings& s) {
            if (s.github_owner.empty()) return;
            try {
              (void)github::OwnerScope::parse(s.github_owner);
            } catch (const std::invalid_argument& e) {
              c.reject("github_owner", e.what());
            }
          }),
      checked<Settings>(
          string_row("github_runner_group", &Settings::github_runner_group,
                     "the runner group organization or enterprise runners join (config.sh --runnergroup; default: the "
                     "Default group); not for a repository's runners"),
          [](const Config& c, Settings& s) {
            if (s.github_runner_group.empty()) return;
            if (!github::valid_runner_group(s.github_runner_group)) {
              c.reject("github_runner_group", "'" + s.github_runner_group +
                                                  "': letters, digits, spaces and - _ . only, starting with a letter or "
                                                  "digit, at most 100");
            }
            if (!s.github_owner.empty() && github::OwnerScope::parse(s.github_owner).is_repository()) {
              c.reject("github_runner_group", "runner groups are for organization and enterprise runners; github_owner '" +
                                                  s.github_owner + "' is a repository");
            }
          }),
      {{"github_token", K::kSecret, "",
        "a personal access token: classic with repo (repository runners), admin:org (organization) or "
        "manage_runners:enterprise (enterprise), or fine-grained with Administration: read and write (repository) "
        "or Self-hosted runners: read and write (organization); set it through RUNPOOL_GITHUB_TOKEN or the config "
        "file, never on the command line"},
       [](const Config& c, Settings& s) { s.github_token = c.get_secret("github_token"); }},
      checked<Settings>(
          string_row("github_app_id", &Settings::github_app_id, "GitHub App: its client ID or App ID (instead of a PAT)"),
          [](const Config& c, Settings& s) {
            if (!s.github_token.empty() && !s.github_app_id.empty()) {
              c.reject("github_app_id", "give either github_token or a GitHub App, not both");
            }
            if (!s.github_app_id.empty() && !s.github_owner.empty() &&
                github::OwnerScope::parse(s.github_owner).is_enterprise()) {
              c.reject("github_app_id", "GitHub Apps cannot manage an enterprise's runners; give github_token, a classic "
                                        "personal access token with the manage_runners:enterprise scope");
            }
          }),
      string_row("github_app_private_key_file", &Settings::github_app_private_key_file,
                 "GitHub App: path of its PEM private key"),
      {{"github_app_private_key", K::kSecret, "", "GitHub App: the PEM private key itself (e.g. from the environment)"},
       [](const Config& c, Settings& s) {
         s.github_app_private_key = c.get_secret("github_app_private_key");
         if (!s.github_app_private_key_file.empty() && !s.github_app_private_key.empty()) {
           c.reject("github_app_private_key_file", "give either github_app_private_key_file or github_app_private_key");
         }
       }},
      {{"github_app_installation_id", K::kInt, "", "GitHub App: installation id (default: looked up)", 1},
       [](const Config& c, Settings& s) {
         if (c.has("github_app_installation_id")) s.github_app_installation_id = c.get_int("github_app_installation_id");
       }},
      duration_row("github_timeout", &Settings::github_timeout, "timeout of one GitHub request", 100 * kMs, 10 * kMin),
      int_row("github_max_pages", &Settings::github_max_pages,
              "the most pages (100 runners each) one runner listing may read; a longer list fails rather than act on a "
              "part of it",
              1, 100000),
  };
}

}  // namespace runpool::controller::settings_rows
