#!/bin/bash
# usage: run-bats.sh <name> <runtime-path>
name=$1; rt=$2
cd ${CONF_DIR:?set CONF_DIR to the conformance work directory}/runc-src
mkdir -p $CONF_DIR/runc-bats; log=$CONF_DIR/runc-bats/$name.log; : > $log
for f in tests/integration/*.bats; do
  echo "=== FILE $f $(date +%T)" >> $log
  timeout -k 10 600 script -e -q -c "RUNC=$rt bats --tap $f" /dev/null >> $log 2>&1 < /dev/null
  echo "=== RC $? $(date +%T)" >> $log
done
echo "=== FINISHED" >> $log
