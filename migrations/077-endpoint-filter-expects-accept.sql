-- Whether an endpoint's filter accepted most of its recent events, as a worker last found it
-- (activities/filter-forecast.ts): prepare's first statement inserts the delivery rows of such
-- endpoints before their filter decides, so the filter's usual answer costs no second statement
-- (docs/content-routing.md, "What a filter costs"). Written only beside a surprise's statement.
-- A constant default: a catalog change, the table is not rewritten.
ALTER TABLE webhook_endpoint ADD COLUMN filter_expects_accept boolean NOT NULL DEFAULT false;
