import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { walkableByOthers } from '../../../src/dev/postgres-reach.js';

describe('walkableByOthers: may the postgres user walk down to a folder?', () => {
  let base: string;
  beforeAll(async () => {
    base = await mkdtemp(path.join(tmpdir(), 'wf-reach-'));
    await mkdir(path.join(base, 'open/inner'), { recursive: true });
    await mkdir(path.join(base, 'shut/inner'), { recursive: true });
    await chmod(base, 0o755);
    await chmod(path.join(base, 'open'), 0o755);
    await chmod(path.join(base, 'shut'), 0o700);
  });
  afterAll(() => rm(base, { recursive: true, force: true }));

  it.each([
    ['every folder o+x', 'open/inner', true],
    ['a folder above is 0700', 'shut/inner', false],
    ['the folder itself is 0700', 'shut', false],
    ['not made yet, below walkable folders', 'open/inner/later/deeper', true],
    ['not made yet, below a 0700 folder', 'shut/later', false],
  ])('%s', async (_name, rel, expected) => {
    expect(await walkableByOthers(path.join(base, rel))).toBe(expected);
  });
});
