import { murmur2 } from '@platformatic/kafka';
import { describe, expect, it } from 'vitest';
import {
  keyedPartition,
  recordBytes,
  recordOffsets,
  STICKY_WHILE_MS,
  unkeyedPartition,
} from '../../../../src/destinations/kafka/produce-batch.js';
import { MIN_TIME_LEFT_MS, nextLatencyMs, sendFloorMs, takeBatch } from '../../../../src/destinations/send-batching.js';

describe('the records one coalesced produce request carries', () => {
  const limits = { records: 3, bytes: 100 };
  it.each([
    { name: 'none waiting: none', sizes: [], batch: [] },
    { name: 'a record alone', sizes: [10], batch: [10] },
    { name: 'all that fit', sizes: [10, 20, 30], batch: [10, 20, 30] },
    { name: 'at most `records`', sizes: [1, 1, 1, 1, 1], batch: [1, 1, 1] },
    { name: 'stops before the bytes are exceeded', sizes: [60, 30, 20], batch: [60, 30] },
    { name: 'exactly the bytes', sizes: [60, 40, 1], batch: [60, 40] },
    { name: 'a record over the bytes goes alone', sizes: [150, 10], batch: [150] },
    { name: 'one over the bytes after others waits for the next request', sizes: [10, 150], batch: [10] },
  ])('$name', ({ sizes, batch }) => {
    expect(takeBatch(sizes, (s) => s, limits)).toEqual(batch);
  });
});

describe("each record's offset from its partition's answer", () => {
  const offsets = [
    { topic: 'payments', partition: 0, offset: 41n },
    { topic: 'payments', partition: 2, offset: 7n },
    { topic: 'refunds', partition: 2, offset: 100n },
  ];
  it.each([
    { name: 'one record: the base', topic: 'payments', partition: 0, count: 1, expected: [41n] },
    { name: 'consecutive from the base, in the order sent', topic: 'payments', partition: 2, count: 3, expected: [7n, 8n, 9n] },
    { name: "another topic's partition of the same number", topic: 'refunds', partition: 2, count: 2, expected: [100n, 101n] },
    { name: 'a partition the answer does not name', topic: 'payments', partition: 1, count: 2, expected: null },
  ])('$name', ({ topic, partition, count, expected }) => {
    expect(recordOffsets(offsets, topic, partition, count)).toEqual(expected);
  });

  it('no answer at all: none', () => {
    expect(recordOffsets(undefined, 'payments', 0, 1)).toBeNull();
  });
});

describe("a keyed record's partition: the client's own (murmur2 of the key, unsigned, modulo the partitions)", () => {
  it.each([
    { key: 'cus_42', partitions: 1 },
    { key: 'cus_42', partitions: 3 },
    { key: 'cus_7', partitions: 3 },
    { key: 'ord_0001', partitions: 12 },
    { key: 'é', partitions: 5 },
  ])('$key over $partitions partitions', ({ key, partitions }) => {
    const partition = keyedPartition(Buffer.from(key), partitions);
    expect(partition).toBe((murmur2(Buffer.from(key)) >>> 0) % partitions);
    expect(partition).toBeGreaterThanOrEqual(0);
    expect(partition).toBeLessThan(partitions);
  });
});

describe('the size a record counts for', () => {
  it.each([
    { name: 'a value', record: { value: Buffer.alloc(10), headers: new Map<Buffer, Buffer>() }, bytes: 10 },
    {
      name: 'key and value',
      record: { key: Buffer.from('cus_42'), value: Buffer.alloc(10), headers: new Map<Buffer, Buffer>() },
      bytes: 16,
    },
    {
      name: 'with headers, names and values',
      record: { value: Buffer.alloc(10), headers: new Map([[Buffer.from('ce_id'), Buffer.from('abc')]]) },
      bytes: 18,
    },
  ])('$name: $bytes', ({ record, bytes }) => {
    expect(recordBytes(record)).toBe(bytes);
  });
});

describe('where records without a key go: the partition whose request is in flight, while it is young', () => {
  it.each([
    { name: 'none in flight: the next partition', sticky: 0, count: 3, sentAt: null, now: 1_000, partition: 1 },
    { name: 'none in flight, the last partition: the first', sticky: 2, count: 3, sentAt: null, now: 1_000, partition: 0 },
    { name: 'a request in flight for 5 ms: join it', sticky: 1, count: 3, sentAt: 995, now: 1_000, partition: 1 },
    { name: 'in flight just under the bound: join it', sticky: 1, count: 3, sentAt: 1_000 - STICKY_WHILE_MS + 1, now: 1_000, partition: 1 },
    {
      name: 'in flight for the bound: a slow partition, the next',
      sticky: 1,
      count: 3,
      sentAt: 1_000 - STICKY_WHILE_MS,
      now: 1_000,
      partition: 2,
    },
    { name: 'one partition: always it', sticky: 0, count: 1, sentAt: null, now: 1_000, partition: 0 },
    { name: 'fewer partitions than before (metadata changed): back in range', sticky: 5, count: 3, sentAt: 999, now: 1_000, partition: 0 },
  ])('$name', ({ sticky, count, sentAt, now, partition }) => {
    expect(unkeyedPartition(sticky, count, sentAt, now)).toBe(partition);
  });
});

describe("the time a record must have left to be sent: 1 s, or twice the partition's latency, at most half the attempt's time", () => {
  it.each([
    { name: 'no answer yet, a 10 s attempt: 1 s', timeoutMs: 10_000, latency: null, floor: MIN_TIME_LEFT_MS },
    { name: 'a healthy partition (5 ms): 1 s', timeoutMs: 10_000, latency: 5, floor: MIN_TIME_LEFT_MS },
    { name: 'a partition answering in 800 ms: 1.6 s', timeoutMs: 10_000, latency: 800, floor: 1_600 },
    { name: 'a partition answering in 4 s, a 10 s attempt: half of it', timeoutMs: 10_000, latency: 4_000, floor: 5_000 },
    { name: 'a 1 s attempt: half a second, so it is still sent after a short wait', timeoutMs: 1_000, latency: 5, floor: 500 },
    { name: 'a 2 s attempt, a healthy partition: 1 s', timeoutMs: 2_000, latency: 5, floor: 1_000 },
  ])('$name', ({ timeoutMs, latency, floor }) => {
    expect(sendFloorMs(timeoutMs, latency)).toBe(floor);
  });

  it.each([
    { name: 'the first answer is the latency', recent: null, request: 12, next: 12 },
    { name: 'one slow answer moves it part of the way', recent: 10, request: 110, next: 40 },
    { name: 'steady answers keep it', recent: 8, request: 8, next: 8 },
  ])('latency: $name', ({ recent, request, next }) => {
    expect(nextLatencyMs(recent, request)).toBeCloseTo(next, 6);
  });
});
