# The two commands of the README:
#   make demo   runs a Ralph loop locally (dev server + worker + starter)
#   make test   runs every test (unit, dev-server integration, PostgreSQL cluster)
.PHONY: demo test unit bench histories

demo:
	bash scripts/local-run.sh

test:
	bash scripts/test.sh

unit:
	go test -race ./report/... ./workflows/... ./agent/... ./activities/... ./internal/... ./deploy/...

bench:
	bash scripts/bench.sh

histories:
	go run ./cmd/recordhistories -out workflows/testdata/histories
