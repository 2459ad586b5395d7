import { readdir } from 'node:fs/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { fileDatabase } from '../support/db.js';

describe('webhook-fanout CLI', () => {
  const t = fileDatabase();
  beforeAll(async () => {
    // an empty database, as a new install finds it
    await t.database.db.raw('drop schema public cascade; create schema public');
  });

  it('migrate applies every migration once and records it; a second run changes nothing', async () => {
    const files = (await readdir(new URL('../../migrations/', import.meta.url))).filter((f) => f.endsWith('.sql')).sort();
    const first = await cli(['migrate'], { DATABASE_URL: t.database.url, LOG_LEVEL: 'info' });
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(`applied ${files.length} migration`);
    const second = await cli(['migrate'], { DATABASE_URL: t.database.url, LOG_LEVEL: 'info' });
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('schema up to date');
    const recorded = await t.database.db('knex_migrations').select('name').orderBy('id');
    expect(recorded.map((r: { name: string }) => r.name)).toEqual(files);
  });

  it('refuses to start with a message naming every configuration problem', async () => {
    const res = await cli(['ingest'], {
      DATABASE_URL: 'not a url with password hunter2',
      PORT: '99999',
      INBOUND_BODY_LIMIT_BYTES: 'lots',
    });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('invalid configuration');
    expect(res.stderr).toContain('DATABASE_URL must be a URL');
    expect(res.stderr).toContain('PORT must be an integer between 0 and 65535');
    expect(res.stderr).toContain('INBOUND_BODY_LIMIT_BYTES must be an integer');
    expect(res.stderr).toContain('TOPIC_ARN is required');
  });

  it('does not echo a password embedded in DATABASE_URL', async () => {
    const res = await cli(['migrate'], { DATABASE_URL: 'postgres://u:hunter2@:not-a-port/db' });
    expect(res.code).not.toBe(0);
    expect(res.stderr + res.stdout).not.toContain('hunter2');
  });

  it('answers an unknown command with usage and exit code 2', async () => {
    const res = await cli(['frobnicate'], {});
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('unknown command "frobnicate"');
    expect(res.stderr).toContain('usage: webhook-fanout <command>');
  });
});
