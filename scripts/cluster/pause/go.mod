module webhook-fanout/pause

go 1.24
