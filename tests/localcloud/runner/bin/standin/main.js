'use strict';
// Entry of `bin/Runner.Listener`: parses the command line (and ACTIONS_RUNNER_INPUT_*, which it
// removes from the environment), then configures, removes or runs. The process title starts
// with `Runner.Listener` so process listings and `pgrep Runner.Listener` see it by that name.
const { parse } = require('./args');
const { Log } = require('./log');
const files = require('./files');
const { VERSION } = require('./client');

async function main(argv) {
  process.title = ['Runner.Listener', ...argv].join(' ');
  const cmd = parse(argv);
  const log = new Log(files.ROOT, 'Runner');
  if (cmd.flag('version')) { log.out(VERSION); return 0; }
  if (cmd.flag('help')) {
    log.out('Commands: configure [--url U --token T --name N --labels a,b --no-default-labels --work W --replace --unattended --ephemeral --disableupdate --runnergroup G]');
    log.out('          remove [--token T | --local]     run [--jitconfig B64 | --once]');
    return 0;
  }
  if (cmd.unknown.length) {
    log.err(`Unrecognized command-line input arguments: '${cmd.unknown.join(', ')}'. For usage refer to: ./config.sh --help or ./run.sh --help`);
    return 1;
  }
  if (cmd.command === 'configure') return require('./configure').configure(cmd, log);
  if (cmd.command === 'remove') return require('./configure').remove(cmd, log);
  if (cmd.command === 'warmup') return 0;
  const { Listener } = require('./listen');
  return new Listener(cmd, log).start();
}

module.exports = { main };
