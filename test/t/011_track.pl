# Change capture and refresh under real server conditions:
#  - several sessions change a tracked graph's tables at once (inserts,
#    deletes, updates, rolled-back transactions) while another refreshes it
#    again and again; after a last refresh the graph equals a fresh load;
#  - queries racing with refreshes see one version or the other, never a mix;
#  - a restart with changes pending: the graph, loaded again with the same
#    call, is still tracked, nothing is applied twice or lost;
#  - roles: capture runs with the changing role's rights, a role reads no
#    other role's change log and cannot track another role's tables.
use FindBin;
use lib $FindBin::RealBin;
use GnnTest;

my $secs = $ENV{GNN_TRACK_SECS} // 5;
my $node = gnn_node('track', conf => q{
max_connections = 40
gnn.threads = 1
gnn.merge_threshold = 0.9
});

sq(q{
	CREATE EXTENSION gnn;
	CREATE TABLE n (id bigint PRIMARY KEY, feat real[] NOT NULL, label int, split text);
	CREATE TABLE e (src bigint NOT NULL REFERENCES n ON DELETE CASCADE,
	                dst bigint NOT NULL REFERENCES n ON DELETE CASCADE, w real NOT NULL DEFAULT 1);
	INSERT INTO n SELECT i, ARRAY[i, -i]::real[], i % 5, (ARRAY['train', 'val', 'test'])[1 + i % 3]
	FROM generate_series(0, 499) i;
	INSERT INTO e SELECT s, (s * 7 + k) % 500, 1 + (s + k) % 4 FROM generate_series(0, 499) s, generate_series(1, 4) k;
	CREATE FUNCTION same() RETURNS boolean LANGUAGE plpgsql AS $$
	BEGIN
		PERFORM gnn.load_graph('fresh', 'e', nodes => 'n', features => 'feat', label => 'label',
		                       split => 'split', weight => 'w', replace => true);
		RETURN gnn.graph_digest('g') = gnn.graph_digest('fresh');
	END $$;
});
my $load = q{SELECT gnn.load_graph('g', 'e', nodes => 'n', features => 'feat', label => 'label',
	split => 'split', weight => 'w', replace => true)};
sq("$load, gnn.track('g')");
is(sq("SELECT tracked FROM gnn.graphs WHERE name = 'g'"), 't', 'tracked');

# ---- concurrent writers and a refresher
my $dir = PostgreSQL::Test::Utils::tempdir;
open(my $fh, '>', "$dir/dml.sql") or die;
print $fh q{\set a random(0, 599)
\set b random(0, 599)
\set r random(1, 100)
BEGIN;
SELECT count(*) AS ok FROM (SELECT 1 FROM n WHERE id IN (:a, :b) FOR KEY SHARE) x \gset
INSERT INTO e SELECT :a, :b, (:r % 4) + 1 WHERE :r <= 35 AND :ok = (CASE WHEN :a = :b THEN 1 ELSE 2 END);
DELETE FROM e WHERE ctid = (SELECT ctid FROM e WHERE src = :a LIMIT 1) AND :r > 35 AND :r <= 55;
UPDATE e SET w = w + 1 WHERE src = :a AND :r > 55 AND :r <= 62;
INSERT INTO n SELECT :a, ARRAY[:b, :r]::real[], :r % 5, NULL WHERE :r > 62 AND :r <= 75
	ON CONFLICT (id) DO UPDATE SET feat = excluded.feat, label = excluded.label;
DELETE FROM n WHERE id = :a AND :r > 75 AND :r <= 80 AND :a > 10;
UPDATE n SET split = CASE WHEN :r % 2 = 0 THEN 'train' END WHERE id BETWEEN :a AND :a + 5 AND :r > 80;
END;
BEGIN;
INSERT INTO e SELECT 0, 1, 99 WHERE :r <= 30;
ROLLBACK;
};
close $fh;
open($fh, '>', "$dir/refresh.sql") or die;
print $fh q{SELECT * FROM gnn.refresh_graph('g');
\sleep 100 ms
};
close $fh;
my @pgb = ('pgbench', '-n', '-h', $node->host, '-p', $node->port, 'postgres');
my ($out, $err);
# deadlocks between writers (a cascade against a key-share lock) are retried
my $writers = IPC::Run::start([@pgb, '-c', '4', '-T', $secs, '--max-tries=20', '-f', "$dir/dml.sql"],
	'>', \$out, '2>', \$err);
my ($rout, $rerr);
my $refresher = IPC::Run::start([@pgb, '-c', '1', '-T', $secs, '-f', "$dir/refresh.sql"], '>', \$rout, '2>', \$rerr);
ok($writers->finish, 'writers ran') or diag($err);
note(join("\n", grep { /processed|failed|retried/ } split /\n/, $out));
ok($refresher->finish, 'refreshes ran alongside') or diag($rerr);
like($out, qr/number of transactions actually processed: [1-9]/, 'writers committed transactions');
sq("SELECT * FROM gnn.refresh_graph('g')");
is(sq('SELECT same()'), 't', 'after concurrent changes and refreshes, the graph equals a fresh load');
is(sq("SELECT pending_changes FROM gnn.graphs WHERE name = 'g'"), '0', 'nothing pending');

# ---- refreshes racing with queries: two versions, every answer from one of them
# version X: node 0 and node 1 each have 3 extra out-edges; version Y: 5 each
sq(q{CREATE TABLE flip (v int); INSERT INTO flip VALUES (0)});
my $base = sq("SELECT gnn.degree('g', 0) + gnn.degree('g', 1)");
open($fh, '>', "$dir/flip.sql") or die;
print $fh q{BEGIN;
DELETE FROM e WHERE w = 1000;
UPDATE flip SET v = 1 - v;
INSERT INTO e SELECT s, 400 + k, 1000 FROM generate_series(0, 1) s, generate_series(1, 3 + 2 * (SELECT v FROM flip)) k;
END;
SELECT * FROM gnn.refresh_graph('g');
};
close $fh;
sq(q{INSERT INTO n SELECT i, '{0,0}', NULL, NULL FROM generate_series(401, 405) i ON CONFLICT DO NOTHING;
	DELETE FROM e WHERE src IN (0, 1) AND dst BETWEEN 401 AND 405; SELECT * FROM gnn.refresh_graph('g')});
$base = sq("SELECT gnn.degree('g', 0) + gnn.degree('g', 1)");
open($fh, '>', "$dir/read.sql") or die;
# one statement reads both nodes: a mix of versions would give base + 8
print $fh qq{SELECT 1 / (CASE WHEN d IN ($base, $base + 6, $base + 10) THEN 1 ELSE 0 END)
FROM (SELECT gnn.degree('g', 0) + gnn.degree('g', 1) AS d, pg_sleep(0.001)) x;
};
close $fh;
my ($fout, $ferr, $qout, $qerr);
my $flipper = IPC::Run::start([@pgb, '-c', '1', '-T', $secs, '-f', "$dir/flip.sql"], '>', \$fout, '2>', \$ferr);
my $readers = IPC::Run::start([@pgb, '-c', '4', '-T', $secs, '-f', "$dir/read.sql"], '>', \$qout, '2>', \$qerr);
ok($flipper->finish, 'flips and refreshes ran') or diag($ferr);
note(join("\n", grep { /processed/ } split /\n/, $fout . $qout));
ok($readers->finish, 'every answer during refreshes matched one version') or diag($qerr);
like($fout, qr/number of transactions actually processed: [1-9]/, 'the graph changed version during the reads');
# edge rows only: every version the readers raced over was a delta over the one loaded graph
ok(sq("SELECT delta_bytes > 0 FROM gnn.graphs WHERE name = 'g'") eq 't', 'the refreshed versions were deltas');
sq("SELECT * FROM gnn.refresh_graph('g')");
is(sq('SELECT same()'), 't', 'equal to a fresh load after the race');

# ---- restart with pending changes
sq(q{INSERT INTO e VALUES (2, 3, 7), (3, 4, 7); DELETE FROM n WHERE id = 20;
	UPDATE n SET feat = '{1,1}' WHERE id = 21});
ok(sq("SELECT pending_changes FROM gnn.graphs WHERE name = 'g'") > 0, 'changes pending before the restart');
$node->restart;
is(sq("SELECT count(*) || ':' || bool_and(tracked) FROM gnn.graphs WHERE name = 'g'"), '1:true',
	'a tracked graph is back after a restart, as of its last full version, still tracked');
ok(sq("SELECT count(*) FROM gnn.change_log") > 0, 'the log survived the restart');
{
	my ($rc, $out, $err) = $node->psql('postgres', "SELECT inserted_edges > 0 FROM gnn.refresh_graph('g')");
	like($err, qr/reloaded in full: the server restarted/, 'its first refresh after the restart reloads it');
	is(sq('SELECT same()'), 't', 'equal to a fresh load then');
}
sq($load);    # the same call as before: still tracked
is(sq("SELECT tracked, pending_changes FROM gnn.graphs WHERE name = 'g'"), 't|0',
	'loaded again, still tracked; the load covers what was pending');
is(sq('SELECT same()'), 't', 'equal to a fresh load after the restart');
sq(q{INSERT INTO e VALUES (5, 6, 2); DELETE FROM e WHERE src = 7});
my $r = sq("SELECT inserted_edges, deleted_edges FROM gnn.refresh_graph('g')");
like($r, qr/^1\|\d+$/, 'only the changes after the load are applied');
is(sq('SELECT same()'), 't', 'equal to a fresh load: nothing applied twice or lost');

# ---- a restart with a tracked schema graph and a text-keyed graph, changes pending:
# the same load calls bring them back tracked, covering what was pending
sq(q{
	CREATE TABLE sc (id text PRIMARY KEY, v int);
	CREATE TABLE si (id bigint PRIMARY KEY, sc_id text REFERENCES sc, price numeric);
	INSERT INTO sc SELECT 'c' || i, i FROM generate_series(1, 20) i;
	INSERT INTO si SELECT i, 'c' || (1 + i % 20), i FROM generate_series(1, 200) i;
	CREATE TABLE tke (a text NOT NULL, b text NOT NULL);
	INSERT INTO tke SELECT 'n' || i, 'n' || (1 + (i * 7) % 100) FROM generate_series(1, 100) i;
});
my $sload = q{SELECT gnn.load_schema_graph('s', ARRAY['sc', 'si']::regclass[], replace => true)};
my $tload = q{SELECT gnn.load_graph('tk', 'tke', src => 'a', dst => 'b', replace => true)};
sq(q{SELECT gnn.load_schema_graph('s', ARRAY['sc', 'si']::regclass[], track => true);
	SELECT gnn.load_graph('tk', 'tke', src => 'a', dst => 'b', track => true)});
sq(q{INSERT INTO si VALUES (1000, 'c3', 1); UPDATE sc SET v = -1 WHERE id = 'c4';
	INSERT INTO tke VALUES ('n1', 'n2'); DELETE FROM tke WHERE a = 'n5'});
is(sq("SELECT string_agg(name || ':' || (pending_changes > 0), ',' ORDER BY name) FROM gnn.graphs WHERE name IN ('s', 'tk')"),
	's:true,tk:true', 'changes pending on both before the restart');
$node->restart;
sq("$sload; $tload");
is(sq("SELECT string_agg(name || ':' || tracked || ':' || pending_changes, ',' ORDER BY name) FROM gnn.graphs WHERE name IN ('s', 'tk')"),
	's:true:0,tk:true:0', 'loaded again by the same calls: still tracked, nothing pending');
sq(q{INSERT INTO si VALUES (1001, 'c5', 2); INSERT INTO tke VALUES ('n3', 'n4')});
sq(q{SELECT gnn.refresh_graph('s'); SELECT gnn.refresh_graph('tk')});
is(sq(q{SELECT gnn.load_schema_graph('s_fresh', ARRAY['sc', 'si']::regclass[]) IS NOT NULL;
	SELECT gnn.load_graph('tk_fresh', 'tke', src => 'a', dst => 'b') IS NOT NULL;
	SELECT (gnn.graph_digest('s', features => false) = gnn.graph_digest('s_fresh', features => false)) || ',' ||
	       (gnn.graph_digest('tk') = gnn.graph_digest('tk_fresh'))}),
	"t\nt\ntrue,true", 'both equal a fresh load after the restart and a refresh: nothing lost or applied twice '
	  . '(the schema graph keeps its columns\' encoding, a fresh load fits it anew)');
sq(q{SELECT gnn.drop_graph(g) FROM unnest(ARRAY['s', 's_fresh', 'tk', 'tk_fresh']) g});
sq($load);    # 'g' again, for what follows (the restart dropped it)

# ---- a training job over a delta: its merged copy counts against gnn.max_graph_memory
# while the job runs, and is given back when it ends (here: cancelled)
# (between nodes 0-10, which the concurrent writers above never delete)
sq(q{INSERT INTO e VALUES (1, 10, 1); SELECT gnn.refresh_graph('g')});
ok(sq("SELECT delta_bytes > 0 FROM gnn.graphs WHERE name = 'g'") eq 't', 'the refresh left a delta');
my $used0 = sq('SELECT gnn.memory_used()');
my $job = sq(q{SELECT gnn.train('g', model => 'graphsage', name => 'long', epochs => 100000, hidden => 64,
	options => '{"fanouts": [10, 10], "batch_size": 16}')});
my ($counted, $state) = (0, '');
for (1 .. 300)
{
	$state = sq("SELECT state FROM gnn.jobs WHERE id = $job");
	if ($state eq 'running' && sq('SELECT gnn.memory_used()') > $used0) { $counted = 1; last; }
	last if $state =~ /^(succeeded|failed|cancelled)$/;
	select(undef, undef, undef, 0.1);
}
ok($counted, "the running job's merged copy is counted in gnn.memory_used() (state $state)");
sq("SELECT gnn.cancel($job)");
# (gnn.wait raises for a cancelled job: poll its state instead)
for (1 .. 600)
{
	last if sq("SELECT state FROM gnn.jobs WHERE id = $job") =~ /^(succeeded|failed|cancelled)$/;
	select(undef, undef, undef, 0.1);
}
my $back = 0;
for (1 .. 100)
{
	if (sq('SELECT gnn.memory_used()') eq $used0) { $back = 1; last; }
	select(undef, undef, undef, 0.1);
}
ok($back, 'and given back when the job ends');
sq("SELECT gnn.drop_model('long')") if sq("SELECT count(*) FROM gnn.models WHERE name = 'long'") > 0;

# ---- the background refresher (gnn.refresh_naptime)
sq(q{ALTER SYSTEM SET gnn.refresh_naptime = 1; SELECT pg_reload_conf()});
sq(q{INSERT INTO e VALUES (8, 9, 3); UPDATE n SET label = 4 WHERE id = 30});
my $caught_up = 0;
for (1 .. 150)
{
	if (sq("SELECT pending_changes FROM gnn.graphs WHERE name = 'g'") eq '0') { $caught_up = 1; last; }
	select(undef, undef, undef, 0.2);
}
ok($caught_up, 'the background refresher applied the changes');
is(sq('SELECT same()'), 't', 'and the graph equals a fresh load');
ok(sq("SELECT refreshed_at > now() - interval '1 minute' FROM gnn.graphs WHERE name = 'g'") eq 't', 'refreshed_at says when');
# that refresh left a delta (edge rows, a label); a round later, with nothing pending, the
# refresher merges it in the background
my $merged = 0;
for (1 .. 150)
{
	if (sq("SELECT delta_bytes FROM gnn.graphs WHERE name = 'g'") eq '0') { $merged = 1; last; }
	select(undef, undef, undef, 0.2);
}
ok($merged, 'an idle round merged the delta in the background');
is(sq('SELECT same()'), 't', 'still equal to a fresh load');
sq(q{ALTER SYSTEM RESET gnn.refresh_naptime; SELECT pg_reload_conf()});

# ---- roles
sq(q{
	CREATE ROLE alice LOGIN; CREATE ROLE bob LOGIN;
	CREATE TABLE ae (src int NOT NULL, dst int NOT NULL) ;
	ALTER TABLE ae OWNER TO alice;
	INSERT INTO ae SELECT i, i + 1 FROM generate_series(1, 20) i;
	GRANT INSERT, SELECT ON ae TO bob;
	CREATE SCHEMA bobs AUTHORIZATION bob;
});
my $alice = sub { return $node->safe_psql('postgres', "SET ROLE alice; $_[0]"); };
my $bob = sub { my ($sql) = @_; my ($o, $e); $node->psql('postgres', "SET ROLE bob; $sql", stdout => \$o, stderr => \$e); return ($o, $e); };
$alice->(q{SELECT gnn.load_graph('ag', 'ae', track => true)});
my ($o, $e) = $bob->(q{INSERT INTO ae VALUES (100, 1)});
is($e, '', 'bob writes to alice\'s tracked table (his INSERT privilege suffices)');
is($alice->(q{SELECT pending_changes FROM gnn.graphs WHERE name = 'ag'}), '1', 'his change is in alice\'s log');
($o, $e) = $bob->(q{SELECT count(*) FROM gnn.change_log});
is($o, '0', 'bob reads none of alice\'s change log');
($o, $e) = $bob->(q{SELECT * FROM gnn.refresh_graph('ag')});
like($e, qr/graph "ag" does not exist/, 'bob cannot refresh alice\'s graph (names are per role)');
($o, $e) = $bob->(q{SELECT gnn.load_graph('bg', 'ae', track => true)});
like($e, qr/permission denied/, 'bob cannot track alice\'s table without the TRIGGER privilege');
($o, $e) = $bob->(q{DELETE FROM gnn.change_log});
like($e, qr/permission denied/, 'bob cannot delete log rows');
is($alice->(q{SELECT inserted_edges, inserted_nodes FROM gnn.refresh_graph('ag')}), '1|1', 'alice refreshes');
($o, $e) = $bob->(q{CREATE TABLE bobs.be (src int, dst int); INSERT INTO bobs.be VALUES (1, 2);
	CREATE TRIGGER fake AFTER INSERT ON bobs.be REFERENCING NEW TABLE AS n FOR EACH STATEMENT
	EXECUTE FUNCTION gnn._capture('ag', '} . sq("SELECT 'alice'::regrole::oid") . q{', 'e', 'src', 'dst', '', '');
	INSERT INTO bobs.be VALUES (500, 501)});
is($e, '', 'bob plants a capture trigger on his own table, naming alice\'s graph');
is($alice->(q{SELECT inserted_edges, inserted_nodes FROM gnn.refresh_graph('ag')}), '0|0',
	'rows from a table alice\'s graph was not loaded from are never applied');

$node->stop;
done_testing();
