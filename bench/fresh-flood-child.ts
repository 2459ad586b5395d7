// The flood of wrong passwords of the bench's fresh-ingest case (fresh-flood.ts), in a process of
// its own so that its event loop is not the valid senders'. Argument 1: the FloodPlan as JSON;
// argument 2: seconds. Prints the answers by status as JSON.
import { setTimeout as sleep } from 'node:timers/promises';
import { floodWrongPasswords, type FloodPlan } from './fresh-flood.js';

const plan = JSON.parse(process.argv[2] ?? '{}') as FloodPlan;
const seconds = Number(process.argv[3] ?? '10');
const counts = await floodWrongPasswords(plan, sleep(seconds * 1000));
process.stdout.write(JSON.stringify(counts) + '\n');
