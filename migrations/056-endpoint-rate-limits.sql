-- Per-endpoint rate and concurrency limits (issue 13, part 4; docs/limits.md). The limits hold
-- across every worker replica, so their state lives here, not in a worker's memory. Nothing below
-- depends on migration 055.

-- What the WebhookEndpoint declares (NULL = no limit), and the pause a 429/503 with Retry-After
-- asks for. paused_until is on the endpoint row because every attempt reads that row already:
-- an endpoint without limits pays no round trip to honour it.
ALTER TABLE webhook_endpoint
  ADD COLUMN rate_limit_per_second double precision,
  ADD COLUMN max_concurrency integer,
  ADD COLUMN paused_until timestamptz,
  ADD CONSTRAINT webhook_endpoint_rate_limit_chk
    CHECK (rate_limit_per_second IS NULL OR (rate_limit_per_second >= 0.001 AND rate_limit_per_second <= 10000)),
  ADD CONSTRAINT webhook_endpoint_max_concurrency_chk
    CHECK (max_concurrency IS NULL OR (max_concurrency >= 1 AND max_concurrency <= 1000));

-- A waiting delivery's place in its endpoint's queue: the time it may try again. Kept on the row
-- (not in Temporal) so that it survives a worker's death and works for local activities too.
ALTER TABLE webhook_delivery ADD COLUMN limit_turn_at timestamptz;
-- the last turn still held by a waiting delivery of an endpoint (see webhook_endpoint_admit)
CREATE INDEX webhook_delivery_limit_turn_idx ON webhook_delivery (endpoint_id, limit_turn_at)
  WHERE limit_turn_at IS NOT NULL;

-- One row per limited endpoint, locked by every admission to it (admissions to one endpoint are
-- serialised; to different endpoints they are not).
CREATE TABLE webhook_endpoint_limit_state (
  endpoint_id     uuid PRIMARY KEY REFERENCES webhook_endpoint (id) ON DELETE CASCADE,
  -- the end of the queue: a delivery that has to wait is given this turn, and it moves on
  next_turn_at    timestamptz NOT NULL DEFAULT '-infinity',
  -- when the last admitted request started: the next may start 1/rate later, not earlier
  last_start_at   timestamptz NOT NULL DEFAULT '-infinity',
  -- moving average of request durations, to space the turns of deliveries waiting for a slot
  avg_request_ms  double precision NOT NULL DEFAULT 200
);

-- Concurrency slots as leases: a request in flight holds one until it ends, or until expires_at
-- (its timeout plus a margin) when its worker died without giving it back.
CREATE TABLE webhook_endpoint_lease (
  endpoint_id uuid NOT NULL REFERENCES webhook_endpoint (id) ON DELETE CASCADE,
  delivery_id uuid NOT NULL,
  expires_at  timestamptz NOT NULL,
  PRIMARY KEY (endpoint_id, delivery_id)
);

-- Admission of one request of a delivery to a limited endpoint, atomically, in one round trip.
-- Returns admitted = true (the rate turn is spent and, with a concurrency limit, a lease is held
-- until webhook_endpoint_release), or the time to wait (capped to an integer of ms; the worker
-- waits at most 10 min at a time anyway) and what for. Order of the checks:
--  1. a delivery already queued keeps its turn; before it, it waits (no one jumps the queue:
--     a newcomer queues behind while anyone waits);
--  2. concurrency before rate, so that no delivery holds a slot while it waits for its rate turn;
--  3. a delivery that can not go now is given the next turn: turns are spaced by the larger of
--     1/rate and (average request time / max concurrency), the rate at which slots come free.
CREATE FUNCTION webhook_endpoint_admit(
  p_endpoint uuid, p_delivery uuid, p_per_second double precision, p_max_concurrency integer, p_lease_ms integer)
RETURNS TABLE (admitted boolean, wait_ms integer, reason text)
LANGUAGE plpgsql AS $$
DECLARE
  st webhook_endpoint_limit_state;
  turn timestamptz;
  ts timestamptz;
  rate_gap interval := CASE WHEN p_per_second IS NULL THEN interval '0' ELSE make_interval(secs => 1.0 / p_per_second) END;
  conc_step interval;
  step interval;
  pace text;
  in_flight integer := 0;
  soonest_free timestamptz;
  ready_at timestamptz;
  last_held timestamptz;
  why text;
BEGIN
  -- soft state: its commit need not wait for the WAL flush (a Postgres crash may forget the last
  -- few admissions, and the limits are briefly loose after it; nothing is lost)
  PERFORM set_config('synchronous_commit', 'off', true);
  INSERT INTO webhook_endpoint_limit_state (endpoint_id) VALUES (p_endpoint) ON CONFLICT DO NOTHING;
  SELECT * INTO st FROM webhook_endpoint_limit_state WHERE endpoint_id = p_endpoint FOR UPDATE;
  -- the clock after the lock: now() would be the time this statement began, perhaps before a wait
  ts := clock_timestamp();
  conc_step := CASE WHEN p_max_concurrency IS NULL THEN interval '0'
                    ELSE make_interval(secs => st.avg_request_ms / 1000.0 / p_max_concurrency) END;
  step := greatest(rate_gap, conc_step);
  -- the limit that sets the pace of the queue, reported as the reason of a wait in it
  pace := CASE WHEN rate_gap >= conc_step THEN 'rate' ELSE 'concurrency' END;
  SELECT d.limit_turn_at INTO turn FROM webhook_delivery d WHERE d.id = p_delivery;

  IF turn IS NOT NULL AND turn > ts THEN
    RETURN QUERY SELECT false, least(ceil(extract(epoch FROM turn - ts) * 1000), 2147483647)::integer, pace;
    RETURN;
  END IF;
  IF turn IS NULL AND st.next_turn_at > ts THEN
    -- the queue ends one step after the last turn a PENDING delivery still holds: turns of
    -- deliveries that stopped waiting (workflow terminated, failed) do not hold up newcomers
    SELECT max(d.limit_turn_at) INTO last_held FROM webhook_delivery d
     WHERE d.endpoint_id = p_endpoint AND d.limit_turn_at IS NOT NULL AND d.status = 'PENDING';
    st.next_turn_at := least(st.next_turn_at, coalesce(last_held + step, ts));
  END IF;
  IF turn IS NULL AND st.next_turn_at > ts THEN
    -- others are waiting: queue behind them
    UPDATE webhook_endpoint_limit_state SET next_turn_at = st.next_turn_at + step WHERE endpoint_id = p_endpoint;
    UPDATE webhook_delivery SET limit_turn_at = st.next_turn_at WHERE id = p_delivery;
    RETURN QUERY SELECT false, least(ceil(extract(epoch FROM st.next_turn_at - ts) * 1000), 2147483647)::integer, pace;
    RETURN;
  END IF;

  -- this delivery's turn (or no queue): may it start now?
  ready_at := ts;
  IF p_max_concurrency IS NOT NULL THEN
    SELECT count(*), min(expires_at) INTO in_flight, soonest_free FROM webhook_endpoint_lease
     WHERE endpoint_id = p_endpoint AND delivery_id <> p_delivery AND expires_at > ts;
    IF in_flight >= p_max_concurrency THEN
      -- a slot comes free after about one step, at the latest when the soonest lease expires
      ready_at := least(ts + greatest(step, interval '20 milliseconds'), soonest_free);
      why := 'concurrency';
    END IF;
  END IF;
  IF why IS NULL AND st.last_start_at + rate_gap > ts THEN
    ready_at := st.last_start_at + rate_gap;
    why := 'rate';
  END IF;

  IF why IS NOT NULL THEN
    IF turn IS NULL THEN
      -- first wait: take the next turn, no earlier than this one could start
      turn := greatest(st.next_turn_at, ready_at);
      UPDATE webhook_endpoint_limit_state SET next_turn_at = turn + step WHERE endpoint_id = p_endpoint;
    ELSE
      -- its turn came but the endpoint is still busy: it keeps its place at the head
      turn := ready_at;
    END IF;
    UPDATE webhook_delivery SET limit_turn_at = turn WHERE id = p_delivery;
    RETURN QUERY SELECT false, least(greatest(1, ceil(extract(epoch FROM turn - ts) * 1000)), 2147483647)::integer, why;
    RETURN;
  END IF;

  UPDATE webhook_endpoint_limit_state
     SET last_start_at = ts, next_turn_at = greatest(st.next_turn_at, ts + rate_gap)
   WHERE endpoint_id = p_endpoint;
  IF p_max_concurrency IS NOT NULL THEN
    DELETE FROM webhook_endpoint_lease WHERE endpoint_id = p_endpoint AND expires_at <= ts;
    INSERT INTO webhook_endpoint_lease (endpoint_id, delivery_id, expires_at)
    VALUES (p_endpoint, p_delivery, ts + make_interval(secs => p_lease_ms / 1000.0))
    ON CONFLICT (endpoint_id, delivery_id) DO UPDATE SET expires_at = excluded.expires_at;
  END IF;
  IF turn IS NOT NULL THEN
    UPDATE webhook_delivery SET limit_turn_at = NULL WHERE id = p_delivery;
  END IF;
  RETURN QUERY SELECT true, 0, NULL::text;
END;
$$;

-- The end of a request: its lease goes, and its duration feeds the average that spaces turns.
CREATE FUNCTION webhook_endpoint_release(p_endpoint uuid, p_delivery uuid, p_duration_ms double precision)
RETURNS void
LANGUAGE sql AS $$
  SELECT set_config('synchronous_commit', 'off', true);
  DELETE FROM webhook_endpoint_lease WHERE endpoint_id = p_endpoint AND delivery_id = p_delivery;
  UPDATE webhook_endpoint_limit_state
     SET avg_request_ms = avg_request_ms * 0.8 + greatest(p_duration_ms, 1) * 0.2
   WHERE endpoint_id = p_endpoint;
$$;
