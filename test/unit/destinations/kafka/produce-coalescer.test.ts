import { MultipleErrors, NetworkError, ProtocolError, UserError } from '@platformatic/kafka';
import { describe, expect, it } from 'vitest';
import { classifyKafkaError } from '../../../../src/destinations/kafka/classify.js';
import type { AttemptState } from '../../../../src/destinations/kafka/produce-batch.js';
import { createProduceCoalescer, type Produced } from '../../../../src/destinations/kafka/produce-coalescer.js';
import { createTopicRecheck } from '../../../../src/destinations/kafka/topic-recheck.js';

type Producer = Parameters<typeof createProduceCoalescer>[0];
const coalescerOf = (producer: Producer, rereadMs?: number) => createProduceCoalescer(producer, createTopicRecheck(producer, rereadMs));

/**
 * A stand-in for the client (the real broker's paths are in test/destinations/kafka.test.ts): one
 * partition; a request of more than one record is refused as too large after `answerMs`; what was
 * written, and how many requests were in flight at once.
 */
function refusingBatches(answerMs: number) {
  const written: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const producer = {
    metadata: async () => ({ topics: new Map([['t', { partitionsCount: 1 }]]) }),
    send: async ({ messages }: { messages: { value: Buffer }[] }) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((r) => setTimeout(r, answerMs));
      inFlight--;
      if (messages.length > 1) throw Object.assign(new Error('too large'), { apiId: 'MESSAGE_TOO_LARGE' });
      written.push(messages.map((m) => m.value.toString()).join());
      return { offsets: [{ topic: 't', partition: 0, offset: BigInt(written.length) }] };
    },
  };
  return { producer: producer as unknown as Producer, written, maxInFlight: () => maxInFlight };
}

const record = (v: string) => ({ value: Buffer.from(v), headers: new Map<Buffer, Buffer>() });
/** an attempt that has just begun, as the destination makes it */
const attempt = (timeoutMs = 10_000): AttemptState => ({ abandoned: false, deadline: performance.now() + timeoutMs, timeoutMs });

describe('the Kafka coalescer when a batch is refused as too large', () => {
  it('sends each record again alone, one request at a time, and never the record of an attempt that gave up meanwhile', async () => {
    const broker = refusingBatches(40);
    const c = coalescerOf(broker.producer);
    const attempts: AttemptState[] = [attempt(), attempt(), attempt()];
    const produced: Promise<Produced>[] = ['a', 'b', 'c'].map((v, i) => c.produce('t', record(v), attempts[i] ?? attempt()));
    // b's deadline passes while the batch of three is in flight: its attempt has answered "no acknowledgement" and will be retried
    setTimeout(() => {
      if (attempts[1]) attempts[1].abandoned = true;
    }, 15);
    const [a, b, c3] = await Promise.all(produced);
    expect(broker.written).toEqual(['a', 'c']);
    expect(a).toMatchObject({ partition: 0 });
    expect(c3).toMatchObject({ partition: 0 });
    expect(b).toHaveProperty('error');
    expect(broker.maxInFlight()).toBe(1);
  });

  it("one record the broker finds invalid fails its own attempt only, not the others' that shared its request", async () => {
    const written: string[] = [];
    const producer = {
      metadata: async () => ({ topics: new Map([['t', { partitionsCount: 1 }]]) }),
      send: async ({ messages }: { messages: { value: Buffer }[] }) => {
        await new Promise((r) => setTimeout(r, 5));
        // a compacted topic refuses the batch for its record without a key (the broker's words, as an apiId)
        if (messages.some((m) => m.value.toString() === 'bad'))
          throw Object.assign(new Error('Compacted topic cannot accept message without key'), { apiId: 'INVALID_RECORD' });
        written.push(...messages.map((m) => m.value.toString()));
        return { offsets: [{ topic: 't', partition: 0, offset: BigInt(written.length) }] };
      },
    };
    const c = coalescerOf(producer as unknown as Producer);
    const [a, bad, b] = await Promise.all(['a', 'bad', 'b'].map((v) => c.produce('t', record(v), attempt())));
    expect(written).toEqual(['a', 'b']);
    expect(a).toMatchObject({ partition: 0 });
    expect(b).toMatchObject({ partition: 0 });
    expect(bad).toHaveProperty('error');
  });

  it('a refusal of the whole request (the broker unavailable) fails each record of it once, not one by one again', async () => {
    let requests = 0;
    const producer = {
      metadata: async () => ({ topics: new Map([['t', { partitionsCount: 1 }]]) }),
      send: async () => {
        requests++;
        await new Promise((r) => setTimeout(r, 5));
        throw Object.assign(new Error('connection refused'), { code: 'PLT_KFK_NETWORK' });
      },
    };
    const c = coalescerOf(producer as unknown as Producer);
    const produced = await Promise.all(['a', 'b', 'c'].map((v) => c.produce('t', record(v), attempt())));
    for (const p of produced) expect(p).toHaveProperty('error');
    expect(requests).toBe(1);
  });
});

describe("the Kafka coalescer and an attempt's time left", () => {
  it('a record that waited behind a slow request is not sent with less than its floor left; one with enough is', async () => {
    const written: string[] = [];
    const producer = {
      metadata: async () => ({ topics: new Map([['t', { partitionsCount: 1 }]]) }),
      send: async ({ messages }: { messages: { value: Buffer }[] }) => {
        // the first request is slow (a leader struggling), the next ones quick
        await new Promise((r) => setTimeout(r, written.length === 0 ? 600 : 5));
        written.push(...messages.map((m) => m.value.toString()));
        return { offsets: [{ topic: 't', partition: 0, offset: BigInt(written.length) }] };
      },
    };
    const c = coalescerOf(producer as unknown as Producer);
    const first = c.produce('t', record('first'), attempt());
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    // both wait ~600 ms for the first answer: short then has ~400 ms of its 1 s left, under its 500 ms floor
    const [short, long] = await Promise.all([c.produce('t', record('short'), attempt(1_000)), c.produce('t', record('long'), attempt())]);
    expect(await first).toMatchObject({ partition: 0 });
    expect(long).toMatchObject({ partition: 0 });
    expect(short).toMatchObject({
      notSent: {
        code: 'broker_unavailable',
        timedOut: true,
        detail: expect.stringMatching(/^not sent: \d+ ms of the attempt's time left/),
      },
    });
    expect(written).toEqual(['first', 'long']);
  });
});

describe('the Kafka coalescer and a topic created a moment ago', () => {
  it('records for a topic the metadata does not have yet wait for it, then go in one request', async () => {
    const written: string[] = [];
    let reads = 0;
    const producer = {
      // the broker learns of the topic after its third read
      metadata: async () => {
        if (++reads <= 3) throw new UserError('Unknown topic t.');
        return { topics: new Map([['t', { partitionsCount: 1 }]]) };
      },
      send: async ({ messages }: { messages: { value: Buffer }[] }) => {
        written.push(messages.map((m) => m.value.toString()).join());
        return { offsets: [{ topic: 't', partition: 0, offset: BigInt(written.length) }] };
      },
    };
    const c = coalescerOf(producer as unknown as Producer, 10);
    const produced = await Promise.all(['a', 'b'].map((v) => c.produce('t', record(v), attempt())));
    expect(produced).toEqual([
      { partition: 0, offset: 1n },
      { partition: 0, offset: 2n },
    ]);
    expect(written).toEqual(['a,b']);
  });
});

describe('the Kafka coalescer and a leader that does not know the topic yet', () => {
  /** a producer whose metadata has the topic, and whose leader answers the first `unknownAnswers` produce requests UNKNOWN_TOPIC_OR_PARTITION */
  const leaderBehind = (unknownAnswers: number) => {
    const written: string[] = [];
    let requests = 0;
    const producer = {
      metadata: async () => ({ topics: new Map([['t', { partitionsCount: 1 }]]) }),
      send: async ({ messages }: { messages: { value: Buffer }[] }) => {
        await new Promise((r) => setTimeout(r, 2));
        if (++requests <= unknownAnswers)
          throw new MultipleErrors('Producing messages failed.', [new ProtocolError('UNKNOWN_TOPIC_OR_PARTITION')]);
        written.push(...messages.map((m) => m.value.toString()));
        return { offsets: [{ topic: 't', partition: 0, offset: BigInt(written.length) }] };
      },
    };
    return { producer: producer as unknown as Producer, written, requests: () => requests };
  };

  it('nothing was written: the records are sent again once the metadata has the topic, each written once', async () => {
    const broker = leaderBehind(2);
    const c = coalescerOf(broker.producer, 10);
    const produced = await Promise.all(['a', 'b'].map((v) => c.produce('t', record(v), attempt())));
    expect(produced.map((p) => 'partition' in p)).toEqual([true, true]);
    expect(broker.written).toEqual(['a', 'b']);
    expect(broker.requests()).toBe(3);
  });

  it("a leader that keeps saying so fails the record final once its attempt's window has passed", async () => {
    const broker = leaderBehind(Number.POSITIVE_INFINITY);
    const c = coalescerOf(broker.producer, 10);
    const started = performance.now();
    // a 10 s attempt: its window is 2 s (a shorter attempt may end unsent instead, its send floor reached first: retried)
    const produced = await c.produce('t', record('a'), attempt());
    expect(produced).toHaveProperty('error');
    expect(classifyKafkaError((produced as { error: unknown }).error).code).toBe('broker_unknown_destination');
    expect(performance.now() - started).toBeGreaterThanOrEqual(2_000);
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(broker.written).toEqual([]);
  });
});

describe('the Kafka coalescer and a partition whose leader is moving', () => {
  it('no leader in the metadata: the records wait for one within the attempt, then go in one request, written once', async () => {
    const written: string[] = [];
    let requests = 0;
    let reads = 0;
    const producer = {
      // the metadata has no leader for the first three reads (the assignment's and two forced ones)
      metadata: async () => {
        if (++reads <= 3) throw new MultipleErrors('Received response with error', [new ProtocolError('LEADER_NOT_AVAILABLE')]);
        return { topics: new Map([['t', { partitionsCount: 1 }]]) };
      },
      send: async ({ messages }: { messages: { value: Buffer }[] }) => {
        requests++;
        written.push(...messages.map((m) => m.value.toString()));
        return { offsets: [{ topic: 't', partition: 0, offset: BigInt(written.length) }] };
      },
    };
    const c = coalescerOf(producer as unknown as Producer, 10);
    const produced = await Promise.all(['a', 'b'].map((v) => c.produce('t', record(v), attempt())));
    expect(produced.map((p) => 'partition' in p)).toEqual([true, true]);
    expect(written).toEqual(['a', 'b']);
    expect(requests).toBe(1);
  });

  it('a produce answered NOT_LEADER_OR_FOLLOWER is not sent again within the attempt (acks=all: it may be written): retried by the backoff', async () => {
    let requests = 0;
    const producer = {
      metadata: async () => ({ topics: new Map([['t', { partitionsCount: 1 }]]) }),
      send: async () => {
        requests++;
        throw new MultipleErrors('Producing messages failed.', [new ProtocolError('NOT_LEADER_OR_FOLLOWER')]);
      },
    };
    const produced = await coalescerOf(producer as unknown as Producer, 10).produce('t', record('a'), attempt());
    expect(classifyKafkaError((produced as { error: unknown }).error).code).toBe('broker_unavailable');
    expect(requests).toBe(1);
  });

  it('a connect refused once the records wait for a leader (the broker back in the metadata before its listener): waited for too, sent once', async () => {
    const written: string[] = [];
    let requests = 0;
    let reads = 0;
    const refused = () =>
      new NetworkError('Connection to 127.0.0.1:9092 failed.', {
        cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9092'), { code: 'ECONNREFUSED' }),
      });
    const producer = {
      metadata: async () => {
        if (++reads <= 1) throw new MultipleErrors('Received response with error', [new ProtocolError('LEADER_NOT_AVAILABLE')]);
        return { topics: new Map([['t', { partitionsCount: 1 }]]) };
      },
      send: async ({ messages }: { messages: { value: Buffer }[] }) => {
        if (++requests <= 2) throw new MultipleErrors('Producing messages failed.', [refused()]);
        written.push(...messages.map((m) => m.value.toString()));
        return { offsets: [{ topic: 't', partition: 0, offset: BigInt(written.length) }] };
      },
    };
    const produced = await coalescerOf(producer as unknown as Producer, 10).produce('t', record('a'), attempt());
    expect('partition' in produced).toBe(true);
    expect(written).toEqual(['a']);
    expect(requests).toBe(3);
  });

  it('a request cut in flight is not sent again within the attempt (it may have been written): retried by the backoff', async () => {
    let requests = 0;
    const producer = {
      metadata: async () => ({ topics: new Map([['t', { partitionsCount: 1 }]]) }),
      send: async () => {
        requests++;
        throw new MultipleErrors('Producing messages failed.', [new NetworkError('Connection closed')]);
      },
    };
    const produced = await coalescerOf(producer as unknown as Producer, 10).produce('t', record('a'), attempt());
    expect(classifyKafkaError((produced as { error: unknown }).error).code).toBe('broker_unavailable');
    expect(requests).toBe(1);
  });
});
