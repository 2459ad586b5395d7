import { describe, expect, it } from 'vitest';
import { createAwsClients } from '../../../src/transport/aws-clients.js';

describe('createAwsClients', () => {
  it('signs with dummy credentials for an emulator endpoint when the environment has none', async () => {
    const { sns, sqs } = createAwsClients({ region: 'us-east-1', endpoint: 'http://127.0.0.1:4566', env: {} });
    try {
      for (const client of [sns, sqs]) {
        const creds = await client.config.credentials();
        expect(creds.accessKeyId).toBe('test');
        expect(await client.config.maxAttempts()).toBe(2);
      }
    } finally {
      sns.destroy();
      sqs.destroy();
    }
  });

  it('leaves credentials to the standard chain when the environment names some', async () => {
    const env = { AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'from-env' };
    const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
    // the SDK's env provider reads process.env itself
    Object.assign(process.env, env);
    const { sns, sqs } = createAwsClients({ region: 'us-east-1', endpoint: 'http://127.0.0.1:4566', env });
    try {
      const creds = await sqs.config.credentials();
      expect(creds.accessKeyId).toBe('AKIDEXAMPLE');
    } finally {
      sns.destroy();
      sqs.destroy();
      restore('AWS_ACCESS_KEY_ID', saved.id);
      restore('AWS_SECRET_ACCESS_KEY', saved.secret);
    }
  });
});

function restore(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}
