-- 021_notices.sql -- notices sent to webhooks (co_notify, --notify-url).
-- Applied once by co_db_migrate after 020. Never edit an applied
-- migration.
--
-- One row per thing told: kind 'event' with ref the event's id (its
-- smallest change point's) when a fleet change-point event opened. The
-- collector that inserts the row sends the notice; another collector on
-- the same database finds the row there and does not, so several
-- collectors tell each event once. body is the JSON that was sent.
CREATE TABLE notices (
    id            bigserial PRIMARY KEY,
    kind          text NOT NULL,
    ref           text NOT NULL,
    body          text NOT NULL,
    created_at_us bigint NOT NULL,
    UNIQUE (kind, ref)
);
