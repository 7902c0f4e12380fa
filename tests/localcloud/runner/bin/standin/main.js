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
  // Only a build with pull request #4708 knows the drain inputs (and lists them in `run --help`,
  // which is how a supervisor can tell); to any other build they are unknown arguments.
  let mode = null;
  try { mode = files.mode(); } catch { /* reported by run */ }
  const drainInputs = mode === 'drain-file';
  if (!drainInputs) {
    for (const [name, written] of cmd.given) if (name === 'drain-file' || name === 'drain-on-sigusr1') cmd.unknown.push(written);
  }
  // Program.cs 106–119: unknown input is reported on stderr and the command goes on (unknown
  // commands first; only without them are a command's arguments checked).
  const unknown = cmd.unknownCommands.length ? cmd.unknownCommands : cmd.unknown;
  if (unknown.length) {
    const list = `'${unknown.join(', ')}'. For usage refer to: .\\config.cmd --help or ./config.sh --help`;
    log.err(cmd.command ? `Unrecognized command-line input arguments for command ${cmd.command}: ${list}`
      : `This command does not recognize the command-line input arguments: ${list}`);
  }
  if (cmd.flag('help')) {
    log.out('Commands: configure [--url U --token T --name N --labels a,b --no-default-labels --work W --replace --unattended --ephemeral --disableupdate --runnergroup G]');
    log.out('          remove [--token T | --local]     run [--jitconfig B64 | --once]');
    if (drainInputs) {
      log.out(' --drain-file PATH    (run, ephemeral runners) drain once PATH exists: take no new job, finish the one in hand, exit');
      log.out(' --drain-on-sigusr1   (run, ephemeral runners) drain on SIGUSR1');
    }
    return 0;
  }
  if (cmd.command === 'configure') return require('./configure').configure(cmd, log);
  if (cmd.command === 'remove') return require('./configure').remove(cmd, log);
  if (cmd.command === 'warmup') return 0;
  const { Listener } = require('./listen');
  return new Listener(cmd, log).start();
}

module.exports = { main };
