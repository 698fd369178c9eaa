#!/bin/sh
# Registers the namespace Ralph runs in, if it is not there yet.
set -eu
temporal operator namespace describe --namespace "$NAMESPACE" >/dev/null 2>&1 ||
  temporal operator namespace create --namespace "$NAMESPACE" --retention 7d
