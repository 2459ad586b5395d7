import v8 from 'node:v8';
v8.setFlagsFromString('--optimize-for-size');
await import('../../dist/cmd/cli.js');
