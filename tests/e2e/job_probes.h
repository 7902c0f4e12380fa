// The scripts of the security test's jobs, run as the runner user by the stand-in runner: one
// that dumps what a job can see, one that leaves a watcher running past its end.
#pragma once

#include <string>

namespace runpool::controller::e2e {

// What a dump job runs (as the runner user): its view, then it holds its runner until the test
// has read the files it listed. The dump directory is the test's, outside the runner root.
inline std::string dump_job(const std::string& dumps, const std::string& find_roots, const std::string& marker) {
  return "d='" + dumps + "'/\"$GITHUB_JOB\"; mkdir -p \"$d\"\n"
         "id -u > \"$d/uid\"\n"
         "env > \"$d/env\"\n"
         "for p in /proc/[0-9]*; do printf '%s ' \"${p#/proc/}\"; tr '\\0' ' ' < \"$p/cmdline\" 2>/dev/null || true; "
         "echo; done > \"$d/cmdlines\"\n"
         "for p in /proc/[0-9]*; do tr '\\0' '\\n' < \"$p/environ\" 2>/dev/null || true; done > \"$d/environs\"\n"
         "find " + find_roots + " -xdev -type f -newer '" + marker +
         "' -readable -size -8M -print0 2>/dev/null > \"$d/files\" || true\n"
         "touch \"$d/ready\"\n"
         "for i in $(seq 1 1200); do [ -e \"$d/go\" ] && break; sleep 0.1; done\n";
}

// A job that leaves a watcher behind: it records every distinct argv and environment the runner
// user can read on its instance, every 20 ms for up to 150 s (the agent's cleaning ends it).
inline std::string survivor_job(const std::string& dumps) {
  return "d='" + dumps + "'/\"$GITHUB_JOB\"; mkdir -p \"$d\"\n"
         "cat > \"$d/watch.py\" <<'EOF'\n"
         "import os, sys, time\n"
         "seen, end = set(), time.time() + 150\n"
         "with open(sys.argv[1], 'a') as out:\n"
         "    while time.time() < end:\n"
         "        with open(sys.argv[1] + '.beat', 'w') as beat:\n"
         "            beat.write(str(int(time.time() * 1000)))\n"
         "        os.replace(sys.argv[1] + '.beat', sys.argv[1] + '.alive')\n"
         "        for p in os.listdir('/proc'):\n"
         "            for what in ('environ', 'cmdline') if p.isdigit() else ():\n"
         "                try:\n"
         "                    data = open(f'/proc/{p}/{what}', 'rb').read()\n"
         "                except OSError:\n"
         "                    continue\n"
         "                if data and data not in seen:\n"
         "                    seen.add(data)\n"
         "                    out.write(f'{p} {what}: ' + data.replace(b'\\0', b' ').decode('latin1') + '\\n')\n"
         "                    out.flush()\n"
         "        time.sleep(0.02)\n"
         "EOF\n"
         "RUNNER_TRACKING_ID= nohup python3 \"$d/watch.py\" \"$d/watched\" > /dev/null 2>&1 &\n"
         "echo \"$RUNNER_NAME\" > \"$d/runner\"\n"
         // Until the exec: a forked shell still shows the job's tracking id, and the runner's
         // end-of-job sweep would take it.
         "for i in $(seq 1 200); do [ -s \"$d/watched\" ] && break; sleep 0.05; done\n";
}

}  // namespace runpool::controller::e2e
