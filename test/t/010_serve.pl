# Serving from many sessions: 32 sessions asking for the embeddings of one
# uncached model start one computation and all get the same answer; memory
# (gnn.cache and the DSM segments) returns to where it was after
# gnn.cache_drop; a new session answers from the shared result; a graph
# replaced by another session is never answered from stale results; another
# role can neither read a cached result nor learn that it exists.
use FindBin;
use lib $FindBin::RealBin;
use GnnTest;
use Time::HiRes qw(usleep);

my $node = gnn_node('serve', conf => q{
max_worker_processes = 16
max_connections = 60
dynamic_shared_memory_type = mmap
gnn.threads = 1
});
# the segments the registry and the cache account for: the graph's, and one per cached result
sub wait_dsm
{
	my $want = sq(q{SELECT count(*) FROM gnn.graphs}) + sq(q{SELECT count(*) FROM gnn.cache}) + $ENV{GNN_DSM_BASE};
	for (1 .. 50) { last if dsm_files() == $want; usleep(100_000); }
	return $want;
}

# a graph big enough that its full pass takes a noticeable time on one thread
sq(q{
	CREATE EXTENSION gnn;
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	SELECT setseed(0.5);
	CREATE TABLE n AS SELECT id, (id % 3)::int AS label,
		CASE WHEN id % 10 < 6 THEN 'train' WHEN id % 10 < 8 THEN 'val' ELSE 'test' END AS split,
		(SELECT array_agg(random()::real + (j % 3 = id % 3)::int) FROM generate_series(0, 31) j WHERE id >= 0) AS feat
	FROM generate_series(0, 19999) id;
	CREATE TABLE e AS SELECT s.id AS src, ((random() * 6665)::int * 3 + s.id % 3) % 20000 AS dst
	FROM n s, generate_series(1, 8) k;
	GRANT SELECT ON n, e TO alice, bob;
	GRANT CREATE ON SCHEMA public TO alice, bob;
	SET ROLE alice;
	SELECT gnn.load_graph('g', 'e', nodes => 'n', features => 'feat', label => 'label', split => 'split', undirected => true);
	SELECT gnn.train('g', model => 'graphsage', name => 'm', hidden => 64, epochs => 2, seed => 1, wait => true);
});
# wait => true returns once the worker has claimed both results, while it may
# still be filling them (949ee03): both are listed at once, ready soon after
is(sq(q{SET ROLE alice; SELECT count(*) FROM gnn.cache WHERE model = 'm' AND state IN ('computing', 'ready')}), '2',
	'the training worker claimed the embeddings and the probabilities before wait => true returned');
is(wait_for(q{SET ROLE alice; SELECT count(*) FROM gnn.cache WHERE model = 'm' AND state = 'ready'}, '2'), '2',
	'the training worker shared the embeddings and the probabilities');
my $files0 = dsm_files();
$ENV{GNN_DSM_BASE} = $files0 - sq(q{SELECT count(*) FROM gnn.graphs}) - sq(q{SELECT count(*) FROM gnn.cache});
my $bytes = sq(q{SET ROLE alice; SELECT sum(bytes) FROM gnn.cache});
ok($bytes > 20000 * 64 * 4, "they take $bytes bytes");

# ------------------------------------------------------------------ roles
is(sq(q{SET ROLE bob; SELECT count(*) FROM gnn.cache}), '0', 'bob does not see alice\'s cached results');
my ($rc, $out, $err) = $node->psql('postgres', q{SET ROLE bob; SELECT * FROM gnn.similar('m', 1, 3)});
like($err, qr/model "m" does not exist/, 'bob cannot read them through a function');
is(sq(q{SET ROLE bob; SELECT gnn.cache_drop('m')}), 'f', 'bob\'s gnn.cache_drop(\'m\') drops nothing of alice\'s');
is(sq(q{SET ROLE alice; SELECT count(*) FROM gnn.cache}), '2', 'alice\'s results are still there');
is(sq(q{SELECT count(*) FROM gnn.cache}), '2', 'a superuser sees every role\'s');

# ------------------------------------------------------------------ a new session answers from them
is(sq(q{SET ROLE alice; SELECT count(*) FROM gnn.similar('m', 5, 10)}), '10', 'gnn.similar from a new session');
is(sq(q{SET ROLE alice; SELECT hits FROM gnn.cache WHERE kind = 'embedding'}), '1', 'a hit on the shared embeddings');

# ------------------------------------------------------------------ 32 sessions, one computation
is(sq(q{SET ROLE alice; SELECT gnn.cache_drop('m')}), 't', 'gnn.cache_drop empties both results');
is(sq(q{SELECT count(*) FROM gnn.cache}), '0', 'nothing is cached');
is(dsm_files(), $files0 - 2, 'their two segments are gone');
my $dir = $node->basedir;
open(my $f, '>', "$dir/sim.sql") or die;
print $f "SET ROLE alice;\nSELECT 'answer', md5(string_agg(id || ':' || round(score::numeric, 6), ',' ORDER BY score DESC, id)) FROM gnn.similar('m', 42, 20);\n";
close($f);
my @h;
for my $i (1 .. 32)
{
	my ($o, $e) = ('', '');
	push @h, [ IPC::Run::start([ 'psql', '-X', '-At', '-h', $node->host, '-p', $node->port, '-d', 'postgres', '-f', "$dir/sim.sql" ],
			'>', \$o, '2>', \$e), \$o, \$e ];
}
my %answers;
for my $x (@h)
{
	$x->[0]->finish;
	my ($a) = ${ $x->[1] } =~ /answer\|(\w+)/;
	$answers{ $a // 'error: ' . ${ $x->[2] } }++;
}
is(scalar(keys %answers), 1, '32 concurrent sessions all got the same answer') or diag(join(', ', keys %answers));
ok((keys %answers)[0] =~ /^[0-9a-f]{32}$/, 'and it is an answer');
is(sq(q{SELECT count(*) || ' ' || sum(hits) FROM gnn.cache}), '1 31',
	'one computation: one entry, and the 31 other sessions waited for it and hit it');

# ------------------------------------------------------------------ memory back after gnn.cache_drop
is(sq(q{SET ROLE alice; SELECT gnn.cache_drop('m')}), 't', 'dropped again');
is(dsm_files(), $files0 - 2, 'the DSM segments are back to their number');
is(sq(q{SELECT coalesce(sum(bytes), 0) FROM gnn.cache}), '0', 'gnn.cache counts nothing');

# ------------------------------------------------------------------ another session replaces the graph
sq(q{SET ROLE alice; SELECT gnn.embedding('m', 3)});     # a few nodes: k-hop, nothing shared
is(sq(q{SELECT count(*) FROM gnn.cache}), '0', 'a few-node answer is computed on its neighbourhood, not shared');
my $before = sq(q{SET ROLE alice; SELECT (SELECT embedding FROM gnn._embedding_rows('m') WHERE id = 3)::text});
sq(q{UPDATE n SET feat = (SELECT array_agg(x ORDER BY i DESC) FROM unnest(feat) WITH ORDINALITY u(x, i))});
sq(q{SET ROLE alice; SELECT gnn.load_graph('g', 'e', nodes => 'n', features => 'feat', label => 'label', split => 'split', undirected => true, replace => true)});
is(sq(q{SELECT count(*) FROM gnn.cache}), '0', 'the replace dropped the results of the replaced graph');

isnt(sq(q{SET ROLE alice; SELECT (SELECT embedding FROM gnn._embedding_rows('m') WHERE id = 3)::text}), $before,
	'a session after the replace answers from the new graph');
is(sq(q{SET ROLE alice; SELECT gnn.cache_drop('m') IS NOT NULL; CREATE TEMP TABLE k AS SELECT gnn.embedding('m', 3) AS e;
	SELECT (SELECT max(abs(a - b)) FROM unnest(k.e, f.embedding) u(a, b)) < 1e-5 FROM k, gnn._embedding_rows('m') f WHERE f.id = 3}),
	"t\nt", 'and its few-node answer (k-hop) equals the new full result');
is(sq(q{SELECT count(DISTINCT graph_version) FROM gnn.cache}), '1', 'from results of the new graph only');

# a job whose graph is replaced while it trains shares nothing (its results could never be asked for)
my $jr = sq(q{SET ROLE alice; SELECT gnn.train('g', model => 'gcn', name => 'stale', hidden => 16, epochs => 150, seed => 1)});
for (1 .. 300) { last if sq("SELECT state FROM gnn.jobs WHERE id = $jr") eq 'running'; usleep(50_000); }
sq(q{SET ROLE alice; SELECT gnn.load_graph('g', 'e', nodes => 'n', features => 'feat', label => 'label', split => 'split', undirected => true, replace => true)});
is(sq(qq{SET ROLE alice; SELECT state FROM gnn.wait($jr)}), 'succeeded', 'a job trains on while its graph is replaced');
is(sq(q{SELECT count(*) FROM gnn.cache WHERE model = 'stale'}), '0', 'and shares no result of the replaced graph');

# ------------------------------------------------------------------ the budget: least recently used go first
sq(q{ALTER SYSTEM SET gnn.max_cache_memory = '8MB'; SELECT pg_reload_conf()});
sq(q{SET ROLE alice; SELECT gnn.cache_drop('m')});
sq(q{SET ROLE alice; SELECT count(*) FROM gnn.similar('m', 1, 3)});          # m's embeddings: 5.4 MB
usleep(100_000);
sq(q{SET ROLE alice; SELECT gnn.train('g', model => 'gcn', name => 'm2', hidden => 48, epochs => 1, seed => 1, wait => true)});
is(sq(q{SELECT string_agg(model || ' ' || kind, ', ' ORDER BY model, kind) FROM gnn.cache}),
	'm2 embedding, m2 probabilities', 'a new model\'s results evict the least recently used under gnn.max_cache_memory');
ok(sq(q{SELECT sum(bytes) <= 8 * 1024 * 1024 FROM gnn.cache}) eq 't', 'the cache stays within its budget');
sq(q{SET ROLE alice; SELECT gnn.train('g', model => 'gcn', name => 'big', hidden => 128, epochs => 1, seed => 1, wait => true)});
is(sq(q{SELECT count(*) FROM gnn.cache WHERE model = 'big' AND kind = 'embedding'}), '0',
	'a result larger than the budget is not shared');
is(sq(q{SET ROLE alice; SELECT count(*) FROM gnn.similar('big', 1, 3)}), '3', 'but still answers (computed for the transaction)');
is(dsm_files(), wait_dsm(), 'and leaves no segment behind');

$node->stop;
done_testing();
