// What the SDK's batch answers say, read as the signed calls read them (sns-publish-batch.ts, sqs-calls.ts).

/**
 * Ids the answer names neither as done nor as failed count as failed ("NoResult"), as the signed
 * calls count them: only what the service says it took is taken.
 */
export function failuresOf<F extends { Id?: string | undefined }, T>(
  ids: readonly string[],
  successful: readonly { Id?: string | undefined }[] | undefined,
  failed: readonly F[] | undefined,
  toFailure: (id: string, f: F | undefined) => T,
): T[] {
  const byId = new Map((failed ?? []).flatMap((f) => (f.Id === undefined ? [] : [[f.Id, f] as const])));
  const done = new Set((successful ?? []).map((s) => s.Id));
  return ids.flatMap((id) => (byId.has(id) ? [toFailure(id, byId.get(id))] : done.has(id) ? [] : [toFailure(id, undefined)]));
}
