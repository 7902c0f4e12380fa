#!/bin/sh
# Turns a binary's Markdown key reference (`runpool-agent --config-reference`,
# `runpoolctl config --reference`) on stdin into a commented default configuration file on stdout:
# every key, its help, its environment variable and its default, all commented out, so the file
# changes nothing until an operator uncomments a line. $1 is the file's opening comment.
set -eu
printf '%s\n' "$1" | sed 's/^/# /'
printf '#\n# Generated from the configuration schema (runpool/packaging/config/from-reference.sh); every\n'
printf '# key below is commented out and shows its default. Later sources win: this file, then\n'
printf '# RUNPOOL_<KEY> environment variables, then --set key=value.\n'
awk -F' [|] ' '
  /^\| `/ {
    key = $1; sub(/^\| `/, "", key); sub(/`$/, "", key)
    env = $2; gsub(/`/, "", env)
    def = $4; gsub(/`/, "", def)
    help = $5; sub(/ \|$/, "", help)
    printf "\n# %s (%s; %s)\n# %s =%s\n", help, $3, env, key, (def == "" ? "" : " " def)
    n++
  }
  END { if (n == 0) { print "from-reference.sh: no key rows in the reference" > "/dev/stderr"; exit 1 } }
'
