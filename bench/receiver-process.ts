// The e2e rounds' HTTP receiver in a process of its own (startReceiverProcess in bench/receiver.ts),
// as the other destinations' brokers are: in the bench's process it shared one event loop with the
// event publisher and the polling, so HTTP's answers waited on the bench's own work, and its CPU
// could not be told apart from the bench's. `node --import tsx bench/receiver-process.ts` with an
// IPC channel: sends {ready: url} once listening, answers count / arrivedAt, stops on SIGTERM.
import { startReceiver, type ReceiverAnswer, type ReceiverQuestion } from './receiver.js';

const receiver = await startReceiver();
const send = (a: ReceiverAnswer): void => void process.send?.(a);
process.on('message', (q: ReceiverQuestion) => {
  void (async () => {
    if (q.ask === 'count') send({ id: q.id, count: await receiver.count() });
    else send({ id: q.id, arrivedAt: (await receiver.arrivedAt(q.ids)).map((t) => t ?? null) });
  })();
});
const stop = (): void => {
  void receiver.close().finally(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
// the bench gone (its channel closed): do not outlive it
process.once('disconnect', stop);
send({ ready: receiver.url });
