import { kubectl, type KubeConnection } from './kube.js';
import { eventually } from './wait.js';

/** A WebhookReplay as `kubectl get -o json` shows it: what the replay tests read. */
export interface ReplayObject {
  metadata: { uid: string };
  status?: {
    matched?: number;
    skipped?: number;
    started?: number;
    succeeded?: number;
    failed?: number;
    window?: string;
    conditions?: { type: string; status: string; reason: string; message: string }[];
  };
}

/** Reads WebhookReplays through kubectl, as a user checks them. */
export function webhookReplays(conn: () => KubeConnection) {
  const get = async (namespace: string, name: string): Promise<ReplayObject | undefined> => {
    try {
      return JSON.parse(await kubectl(conn(), ['get', 'webhookreplay', name, '-n', namespace, '-o', 'json'])) as ReplayObject;
    } catch {
      return undefined;
    }
  };
  const condition = (o: ReplayObject | undefined, type: string) => o?.status?.conditions?.find((c) => c.type === type);
  /** The replay once its condition `type` (Complete or Failed) is True. */
  const finished = (namespace: string, name: string, type: 'Complete' | 'Failed', timeoutMs = 60_000) =>
    eventually(
      async () => {
        const o = await get(namespace, name);
        return condition(o, type)?.status === 'True' ? o : undefined;
      },
      { timeoutMs, what: `${name} ${type}` },
    );
  return { get, condition, finished };
}
