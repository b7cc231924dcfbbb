// The release's standalone `syncline` (scripts/release.ts: a Node single-executable application) passes the CLI's
// end-to-end cases, run as that one file with no Node on PATH: test/e2e/cli.int.test.ts's cases, imported here
// with SYNCLINE_CLI=standalone, so the same file runs once with the package's bin and once with the executable.
// The arm64 executable cannot run on this machine: release.test.ts checks it is an aarch64 ELF carrying the CLI.
process.env['SYNCLINE_CLI'] = 'standalone';
await import('../e2e/cli.int.test.ts');
