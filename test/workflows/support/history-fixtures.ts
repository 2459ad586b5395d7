import { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;
const HistoryType = temporal.api.history.v1.History;

// Histories are stored as protobufjs plain objects (longs, enums and bytes as strings) and read
// back with the same message type. Not the SDK's historyToJSON/historyFromJSON: in this install
// @temporalio/common and @temporalio/proto each carry their own protobufjs copy, and the proto3-
// JSON path fails its `instanceof Type` check across the two ("type must be a Type").

export function historyToFixture(history: History): unknown {
  return HistoryType.toObject(HistoryType.fromObject(history), { longs: String, enums: String, bytes: String });
}

export function historyFromFixture(json: unknown): temporal.api.history.v1.History {
  return HistoryType.fromObject(json as Record<string, unknown>);
}
