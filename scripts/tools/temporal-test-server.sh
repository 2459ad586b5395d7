#!/usr/bin/env bash
# Provisions, once, Temporal's time-skipping test server for the workflow tests
# (test/workflows/): the TypeScript SDK would download its native build from GitHub, which CI
# cannot reach, so the same server is taken from Maven Central (io.temporal:temporal-test-server,
# pinned) and run on the JVM through a small wrapper the SDK starts as an "existing-path"
# executable. Needs java (>= 11) and mvn: installed with apt-get when missing and possible (root
# on Debian/Ubuntu), else exits 3. Prints the wrapper's path.
set -euo pipefail
cd "$(dirname "$0")/../.."
VERSION=1.31.0
DIR=.cache/temporal-test-server/$VERSION
WRAPPER=$DIR/temporal-test-server
if [ -x "$WRAPPER" ] && [ -f "$DIR/.complete" ]; then echo "$PWD/$WRAPPER"; exit 0; fi
if { ! command -v java >/dev/null || ! command -v mvn >/dev/null; } && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  echo "temporal-test-server: installing a JRE and Maven with apt-get" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends default-jre-headless maven; } >&2 || true
fi
if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
  echo "temporal-test-server: java and mvn are needed to provision the time-skipping test server" >&2
  exit 3
fi
mkdir -p "$DIR/lib"
cat > "$DIR/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local</groupId><artifactId>temporal-test-server-deps</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>io.temporal</groupId><artifactId>temporal-test-server</artifactId><version>$VERSION</version></dependency>
  </dependencies>
</project>
POM
echo "temporal-test-server: fetching io.temporal:temporal-test-server:$VERSION from Maven Central" >&2
mvn -q -B -f "$DIR/pom.xml" dependency:copy-dependencies -DoutputDirectory=lib -DincludeScope=runtime >&2
# the SDK runs "<path> <port>"; the Java main class takes the same single argument
cat > "$WRAPPER" <<'SH'
#!/usr/bin/env bash
exec java -XX:+UseSerialGC -Xss512k -Xmx256m -cp "$(dirname "$0")/lib/*" io.temporal.testserver.TestServer "$@"
SH
chmod +x "$WRAPPER"
touch "$DIR/.complete"
echo "$PWD/$WRAPPER"
