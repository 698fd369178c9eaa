# The two commands of the README:
#   make demo   runs a Ralph loop locally (dev server + worker + starter)
#   make demo-campaign   runs a three-task campaign the same way
#   make demo-plan   runs a campaign whose tasks a planner writes from one objective
#   make test   runs every test (static checks, unit, replay, dev-server and
#               PostgreSQL-cluster integration); it installs what is missing
.PHONY: demo demo-campaign demo-plan test lint unit realstack cluster-test kubernetes-test bench histories devserver cluster

demo:
	bash scripts/local-run.sh

demo-campaign:
	bash scripts/local-run.sh --campaign

demo-plan:
	bash scripts/local-run.sh --plan

# The steps of `make test`, each runnable alone (docs/testing.md).
test:
	bash scripts/test.sh all

lint:
	bash scripts/test.sh lint

unit:
	bash scripts/test.sh unit

realstack:
	bash scripts/test.sh realstack

cluster-test:
	bash scripts/test.sh cluster

kubernetes-test:
	bash scripts/test.sh kubernetes

bench:
	bash scripts/bench.sh

histories:
	go run ./cmd/recordhistories -out workflows/testdata/histories $(if $(NAME),-name $(NAME))

# A Temporal server to point a worker at: the dev server, or the
# PostgreSQL-backed cluster (prints export lines; Ctrl-C tears it down).
devserver:
	go run ./cmd/ralph-devserver --port 7233 --ui-port 8233 --db-filename .ralph/temporal.db

cluster:
	go run ./cmd/ralph-cluster
