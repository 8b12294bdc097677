# Progress where psql users see it (gnn.progress, on by default): a job
# waited for with gnn.train(..., wait => true) or gnn.wait reports its
# epochs as NOTICEs (epoch of epochs, loss, the validation metric, time so
# far and left), in order, ending with its last epoch; a load of a large
# table reports the rows it read and its phases, and gnn.partition its
# phases; gnn.progress = off says nothing (VERBOSE is an SQL keyword: SET gnn.progress = off).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use GnnTest;

my $node = gnn_node('progress', conf => 'max_worker_processes = 16');

sq(q{
	CREATE EXTENSION gnn;
	CREATE TABLE n AS SELECT id, (id % 3) AS label,
		CASE WHEN id < 300 THEN 'train' WHEN id < 400 THEN 'val' ELSE 'test' END AS split,
		(SELECT array_agg(CASE WHEN j % 3 = id % 3 THEN 1 ELSE 0 END + ((id * 7 + j) % 11) / 11.0 ORDER BY j)
		   FROM generate_series(0, 15) j)::real[] AS feat
	FROM generate_series(0, 599) id;
	CREATE TABLE e AS SELECT s.id AS src, ((s.id * 13 + k * 3) % 200) * 3 + s.id % 3 AS dst
	FROM n s, generate_series(1, 4) k;
	SELECT gnn.load_graph('g', 'e', nodes => 'n', features => 'feat', label => 'label', split => 'split',
		undirected => true);
});

# ------------------------------------------------------------------ a job's epochs
my ($rc, $out, $err) = $node->psql('postgres',
	q{SELECT gnn.train('g', model => 'gcn', name => 'm', epochs => 300, seed => 1, wait => true) IS NOT NULL});
is($rc, 0, 'gnn.train(..., wait => true) succeeds');
my @lines = grep { /training job \d+: epoch/ } split /\n/, $err;
ok(@lines >= 1, 'it reports the job\'s progress as NOTICEs (' . scalar(@lines) . ' lines)');
my $format = 1;
my @epochs;
for my $l (@lines)
{
	if ($l =~ /NOTICE:  training job \d+: epoch (\d+) of 300, loss [0-9.]+, validation accuracy [0-9.]+, [0-9.]+ s, (about [0-9.]+ s left|done)/)
	{
		push @epochs, $1;
	}
	else
	{
		$format = 0;
		diag("unexpected: $l");
	}
}
ok($format, 'each names the epoch of the epochs, the loss, the validation accuracy, the time so far and left (or done)');
is_deeply([ sort { $a <=> $b } @epochs ], \@epochs, 'in order');
my $ran = sq(q{SELECT metrics->>'epochs_run' FROM gnn.models WHERE name = 'm'});
is($epochs[-1], $ran, "the last one is the job's last epoch ($ran)");
ok(@lines <= 12, 'at most one per tenth of the epochs, and the end (' . scalar(@lines) . ')');

# gnn.wait reports too; gnn.progress = off stops it
($rc, $out, $err) = $node->psql('postgres', q{
	BEGIN; SELECT gnn.train('g', model => 'gcn', name => 'm2', epochs => 300, seed => 2) AS job \gset
	COMMIT;
	SELECT state FROM gnn.wait(:job);});
like($err, qr/training job \d+: epoch \d+ of 300/, 'gnn.wait reports the epochs of the job it waits for');
($rc, $out, $err) = $node->psql('postgres',
	q{SET gnn.progress = off; SELECT gnn.train('g', model => 'gcn', name => 'm3', epochs => 300, seed => 3, wait => true) IS NOT NULL});
is($rc, 0, 'with gnn.progress = off the job still runs');
unlike($err, qr/training job \d+: epoch/, 'and nothing is reported');

# ------------------------------------------------------------------ a large load and a partition
sq(q{CREATE TABLE big AS SELECT i AS src, (i::bigint * 7919 + 13) % 300000 AS dst FROM generate_series(0, 1199999) i});
($rc, $out, $err) = $node->psql('postgres', q{SELECT nodes FROM gnn.load_graph('big', 'big')});
is($rc, 0, 'a load of 1.2M edges');
like($err, qr/read 1200000 rows of public\.big \([0-9.]+ s\)/, 'reports the rows it read and the time');
like($err, qr/graph "big": built, 1200000 nodes and 1200000 arcs \([0-9.]+ s\)/, 'and the graph it built');
($rc, $out, $err) = $node->psql('postgres', q{SELECT count(*) FROM gnn.partition('big', 4, method => 'streaming', balance => '{nodes}')});
is($rc, 0, 'a partition of it');
like($err, qr/graph "big": partitioning 1200000 nodes and 1200000 arcs into 4 parts \(streaming\)/, 'says what it does');
like($err, qr/graph "big": partitioned into 4 parts \([0-9.]+ s\)/, 'and when it is done');
($rc, $out, $err) = $node->psql('postgres', q{SET gnn.progress = off; SELECT nodes FROM gnn.load_graph('big', 'big', replace => true)});
unlike($err, qr/read \d+ rows/, 'gnn.progress = off: a large load says nothing');

$node->stop;
done_testing();
