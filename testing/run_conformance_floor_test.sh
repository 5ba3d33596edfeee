#!/bin/bash
# Runs the conformance floor check binary (first argument) with the rest.
exec "$@"
