#!/bin/bash
# Sourced by config.sh from the runner root: records the configuring user's PATH in `.path` and a
# few well-known variables in `.env` (existing entries win), which the Listener loads at start.

for varName in LANG JAVA_HOME ANT_HOME M2_HOME ANDROID_HOME GRADLE_HOME NVM_BIN NVM_PATH LD_LIBRARY_PATH PERL5LIB; do
    if [ -n "${!varName}" ] && ! grep -q "^${varName}=" .env 2>/dev/null; then
        echo "${varName}=${!varName}" >> .env
    fi
done
touch .env
echo "$PATH" > .path
