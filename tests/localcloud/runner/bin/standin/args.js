'use strict';
// Command line and ACTIONS_RUNNER_INPUT_<NAME> parsing, as the real CommandSettings does:
// `--name value` args, boolean `--flags`, and environment inputs (case-insensitive name, `_`
// standing for `-`), every ACTIONS_RUNNER_INPUT_* variable being removed from the environment
// before any child process starts. Command-line values win over environment inputs.

const COMMANDS = ['configure', 'remove', 'run', 'warmup'];
const FLAGS = ['check', 'commit', 'disableupdate', 'ephemeral', 'help', 'once', 'replace', 'runasservice', 'unattended', 'version', 'no-default-labels', 'local', 'drain-on-sigusr1'];
const ARGS = ['auth', 'labels', 'monitorsocketaddress', 'name', 'pat', 'runnergroup', 'startuptype', 'token', 'url', 'username', 'work', 'jitconfig', 'drain-file'];
const PREFIX = 'ACTIONS_RUNNER_INPUT_';

function parse(argv, env = process.env) {
  // As the real CommandLineParser: words before the first `--` are commands; after it, a word
  // is the value of the `--name` before it (else ignored). An unknown `--name` is kept by name
  // (without the dashes), its value taken like any other.
  const commands = [];
  const flags = new Set();
  const args = new Map();
  const unknown = [];
  const given = []; // [name, the argument as written]: what came on the command line
  let hasArgs = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) {
      if (!hasArgs) commands.push(a.toLowerCase());
      continue;
    }
    hasArgs = true;
    let name = a.slice(2).toLowerCase();
    let value = null;
    const eq = name.indexOf('=');
    if (eq >= 0) { value = a.slice(2 + eq + 1); name = name.slice(0, eq); }
    if (FLAGS.includes(name)) flags.add(name);
    else if (ARGS.includes(name)) args.set(name, value ?? argv[++i] ?? '');
    else {
      unknown.push(a.slice(2));
      if (value === null && i + 1 < argv.length && !argv[i + 1].startsWith('-')) i++;
      continue;
    }
    given.push([name, a.slice(2)]);
  }
  const known = commands.filter((c) => COMMANDS.includes(c));
  const unknownCommands = commands.filter((c) => !COMMANDS.includes(c));
  const envArgs = new Map();
  for (const key of Object.keys(env)) {
    if (!key.toUpperCase().startsWith(PREFIX)) continue;
    const value = String(env[key] || '').trim();
    if (value) envArgs.set(key.slice(PREFIX.length).toLowerCase().replace(/_/g, '-'), value);
    delete env[key];
  }
  const envValue = (n) => envArgs.get(n) ?? envArgs.get(n.replace(/-/g, ''));
  return {
    command: known[0] || null,
    unknownCommands,
    unknown,
    given,
    get: (n) => (args.has(n) && args.get(n) !== '' ? args.get(n) : envValue(n) ?? null),
    flag: (n) => flags.has(n) || String(envValue(n) || '').toLowerCase() === 'true',
  };
}

module.exports = { parse };
