#!/bin/sh
# Registers the namespace Ralph runs in and the search attributes the Ralph
# workflow upserts, where they are not there yet.
set -eu
temporal operator namespace describe --namespace "$NAMESPACE" >/dev/null 2>&1 ||
  temporal operator namespace create --namespace "$NAMESPACE" --retention 7d
existing=$(temporal operator search-attribute list --namespace "$NAMESPACE")
for sa in RalphPhase=Keyword RalphRound=Int RalphOutcome=Keyword RalphWorkspace=Keyword RalphCampaign=Keyword; do
  name=${sa%=*}
  printf '%s\n' "$existing" | grep -qw "$name" ||
    temporal operator search-attribute create --namespace "$NAMESPACE" --name "$name" --type "${sa#*=}"
done
