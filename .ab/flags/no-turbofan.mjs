import v8 from 'node:v8';
v8.setFlagsFromString('--no-turbofan');
await import('../../dist/cmd/cli.js');
