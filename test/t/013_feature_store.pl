# Features on disk (feature_store => 'disk', src/pg/store.c): a graph whose
# features live in the graph store's features file comes back after a
# restart and trains exactly as before it, behind a cache smaller than its
# features; other roles still cannot see it; 'auto' puts features on disk
# when gnn.max_graph_memory has no room for them; a flipped payload byte
# fails the read that meets it with the block named and makes the graph
# invalid for every session, a flipped metadata byte or a missing file makes
# it invalid at first use or at start, the server fine; SIGKILL of a loading
# backend and of the postmaster during a load that replaces a disk-featured
# graph leaves the old version or the new one, whole, with only its own
# features file.
use FindBin;
use lib $FindBin::RealBin;
use GnnTest;
use IPC::Run;
use Time::HiRes qw(usleep);

my $node = gnn_node('fstore', conf => q{
max_worker_processes = 16
restart_after_crash = on
});
my $pgdata = $node->data_dir;
sub graph_dir
{
	my ($name, $role) = @_;
	$role //= 'postgres';
	my $db = sq(q{SELECT oid FROM pg_database WHERE datname = 'postgres'});
	my $owner = sq("SELECT oid FROM pg_roles WHERE rolname = '$role'");
	return "$pgdata/gnn/$db/${owner}_" . unpack('H*', $name);
}
sub feature_files { my @f = glob(graph_dir(@_) . '/features-*'); return @f; }
sub flip
{
	my ($path, $at) = @_;
	open(my $fh, '+<:raw', $path) or die "open $path: $!";
	seek($fh, $at, 0);
	read($fh, my $b, 1);
	seek($fh, $at, 0);
	print $fh chr(ord($b) ^ 0x5a);
	close($fh);
}

sq(q{
	CREATE EXTENSION gnn;
	CREATE ROLE alice LOGIN;
	CREATE TABLE n AS SELECT id, (id % 4)::int AS label,
		CASE WHEN id < 1200 THEN 'train' WHEN id < 1600 THEN 'val' ELSE 'test' END AS split,
		(SELECT array_agg(((id * 31 + j * 17) % 97) / 97.0 + CASE WHEN j % 4 = id % 4 THEN 0.5 ELSE 0 END ORDER BY j)
		   FROM generate_series(0, 63) j)::real[] AS feat
	FROM generate_series(0, 1999) id;
	CREATE TABLE e AS SELECT s.id AS src, ((s.id * 7 + k * 13) % 2000) AS dst FROM n s, generate_series(1, 5) k;
	GRANT SELECT ON n, e TO alice;
});
sq(q{SELECT gnn.load_graph('fd', 'e', nodes => 'n', features => 'feat', label => 'label', split => 'split',
	undirected => true, feature_store => 'disk')});
sq(q{SELECT gnn.load_graph('fm', 'e', nodes => 'n', features => 'feat', label => 'label', split => 'split',
	undirected => true)});
my $digest = sq(q{SELECT gnn.graph_digest('fm')});
# its first use makes its shared cache: 64 kB, 256 of the 2000 rows of 256 bytes
is(sq(q{SET gnn.feature_cache_size = '64kB'; SELECT gnn.graph_digest('fd')}), $digest,
	'the disk graph has the memory graph\'s digest');
is(sq(q{SELECT capacity_rows || ':' || cached_rows || ':' || misses FROM gnn.feature_caches WHERE graph = 'fd'}),
	'256:256:2000', 'its shared cache was made by that first use, as big as it asked');
is(scalar(feature_files('fd')), 1, 'one features file');

my $train = q{SET gnn.feature_cache_size = '64kB';
	SELECT gnn.train('%s', model => 'graphsage', name => '%s', hidden => 16, epochs => 3, seed => 9,
	                 options => '{"fanouts": [5, 5], "batch_size": 100}', wait => true) > 0};
sub curve
{
	my ($model) = @_;
	return sq("SELECT string_agg(loss::text || '/' || val_acc::text, ',' ORDER BY epoch) FROM gnn.training_log l
		JOIN gnn.models m ON m.job = l.job WHERE m.name = '$model' AND m.version = (SELECT max(version) FROM gnn.models
		WHERE name = '$model')");
}
sq(sprintf($train, 'fm', 'm_mem'));
sq(sprintf($train, 'fd', 'm_disk'));
is(curve('m_disk'), curve('m_mem'), 'training from disk has the memory graph\'s curve');
my $rate = sq(q{SELECT min(store_hit_rate) > 0 AND max(store_hit_rate) < 1 AND min(store_bytes_read) > 0
	FROM gnn.training_log l JOIN gnn.models m ON m.job = l.job WHERE m.name = 'm_disk'});
is($rate, 't', 'the cache served some rows and missed others; bytes were read every epoch');
# (to 5 places: read from the job's shared result, or from the nodes' neighbourhoods when it
# is still being made or after the restart, which can differ in the last bits)
my $pred = sq(q{SELECT string_agg(label || ':' || round(score::numeric, 5), ',' ORDER BY id) FROM gnn.predict('m_disk', ARRAY[1, 500, 1999]::bigint[])});
is(sq(q{SELECT misses > 2000 AND hits > 0 FROM gnn.feature_caches WHERE graph = 'fd'}), 't',
	'the training job read through the same cache');

# ------------------------------------------------------------------ restart
$node->restart;
is(sq(q{SELECT state || ':' || feature_store || ':' || persisted FROM gnn.graphs WHERE name = 'fd'}), 'disk:disk:true',
	'after a restart the graph is back, unmapped, its features on disk');
is(sq(q{SELECT count(*) FROM gnn.feature_caches}), '0', 'no cache until it is used');
is(sq(q{SELECT gnn.graph_digest('fd')}), $digest, 'with the same contents');
is(sq(q{SELECT string_agg(label || ':' || round(score::numeric, 5), ',' ORDER BY id) FROM gnn.predict('m_disk', ARRAY[1, 500, 1999]::bigint[])}),
	$pred, 'predictions are the same as before the restart');
sq(sprintf($train, 'fd', 'm_disk'));
is(curve('m_disk'), curve('m_mem'), 'training after the restart has the same curve');
my ($rc, $out, $err) = $node->psql('postgres', q{SET ROLE alice; SELECT gnn.graph_digest('fd')});
like($err, qr/does not exist/, 'another role still cannot see it');

# ------------------------------------------------------------------ auto
# 4000 rows of 64 floats: 1 MB of features
sq(q{CREATE TABLE n2 AS SELECT id, feat FROM n UNION ALL SELECT id + 2000, feat FROM n;
	CREATE TABLE e2 AS SELECT src, dst FROM e UNION ALL SELECT src + 2000, dst + 2000 FROM e;});
($rc, $out, $err) = $node->psql('postgres', q{SET gnn.max_graph_memory = '1MB'; SELECT gnn.load_graph('fb', 'e2',
	nodes => 'n2', features => 'feat')});
like($err, qr/needs .* MB of shared memory/, 'a graph whose features do not fit in gnn.max_graph_memory cannot be loaded');
sq(q{SET gnn.max_graph_memory = '1MB'; SELECT gnn.load_graph('fa', 'e2', nodes => 'n2', features => 'feat',
	feature_store => 'auto')});
is(sq(q{SELECT feature_store FROM gnn.graphs WHERE name = 'fa'}), 'disk',
	"with 'auto' it loads, its features on disk");
is(sq(q{SELECT gnn.graph_digest('fa') = gnn.graph_digest('fa') AND (SELECT nodes FROM gnn.graphs WHERE name = 'fa') = 4000}),
	't', 'and is usable');

# ------------------------------------------------------------------ damaged files
my ($ffile) = feature_files('fd');
my $size = -s $ffile;
flip($ffile, $size - 300);
# rows are ordered by degree: every row is read by a whole-graph digest
($rc, $out, $err) = $node->psql('postgres', q{SET gnn.feature_cache_size = 0; SELECT gnn.graph_digest('fd')});
like($err, qr/block \d+ .*fails its checksum/, 'a flipped payload byte fails the read that meets it, naming the block');
is(sq(q{SELECT state FROM gnn.graphs WHERE name = 'fd'}), 'invalid', 'and makes the graph invalid for every session');
like(sq(q{SELECT store_error FROM gnn.graphs WHERE name = 'fd'}), qr/checksum/, 'with the reason');
($rc, $out, $err) = $node->psql('postgres', q{SELECT count(*) FROM gnn.predict('m_disk')});
like($err, qr/cannot be used/, 'inference on it is refused');
ok(wait_server(), 'the server is fine');
sq(q{SELECT gnn.load_graph('fd', 'e', nodes => 'n', features => 'feat', label => 'label', split => 'split',
	undirected => true, feature_store => 'disk', replace => true)});
is(sq(q{SELECT state FROM gnn.graphs WHERE name = 'fd'}), 'memory', 'loading it again makes it valid');
is(scalar(feature_files('fd')), 1, 'with one features file: the damaged version\'s went');

# a flipped metadata byte: refused at first use after a restart
($ffile) = feature_files('fd');
flip($ffile, 100);
$node->restart;
($rc, $out, $err) = $node->psql('postgres', q{SELECT gnn.graph_digest('fd')});
like($err, qr/cannot be used.*\n.*checksum/s, 'a flipped metadata byte: refused at first use, with the reason');
is(sq(q{SELECT state FROM gnn.graphs WHERE name = 'fd'}), 'invalid', 'and shown invalid');
# a missing features file: refused at start
unlink(feature_files('fa'));
$node->restart;
is(sq(q{SELECT state FROM gnn.graphs WHERE name = 'fa'}), 'invalid', 'a missing features file: invalid from the start');
like(sq(q{SELECT store_error FROM gnn.graphs WHERE name = 'fa'}), qr/could not open/, 'saying so');
sq(q{SELECT gnn.drop_graph('fa')});
ok(!-e graph_dir('fa'), 'drop_graph removes its directory');

# ------------------------------------------------------------------ kills during a load that replaces it
sq(q{CREATE TABLE nb AS SELECT g AS id, ARRAY[g % 5, g % 7, g % 11, 1]::real[] ||
		(SELECT array_agg(j::real) FROM generate_series(1, 60) j) AS feat FROM generate_series(0, 199999) g;
	CREATE TABLE eb AS SELECT g AS src, (g * 7919) % 200000 AS dst FROM generate_series(0, 199999) g;});
sq(q{SELECT gnn.load_graph('fd', 'e', nodes => 'n', features => 'feat', feature_store => 'disk', replace => true)});
my %versions = ('2000' => sq(q{SELECT gnn.graph_digest('fd')}));
sq(q{SELECT gnn.load_graph('fd', 'eb', nodes => 'nb', features => 'feat', feature_store => 'disk', replace => true)});
$versions{'200000'} = sq(q{SELECT gnn.graph_digest('fd')});
sq(q{SELECT gnn.load_graph('fd', 'e', nodes => 'n', features => 'feat', feature_store => 'disk', replace => true)});
my $t0 = Time::HiRes::time();
sq(q{SELECT gnn.load_graph('timing', 'eb', nodes => 'nb', features => 'feat', feature_store => 'disk')});
my $load_s = Time::HiRes::time() - $t0;
sq(q{SELECT gnn.drop_graph('timing')});
note(sprintf('a disk-featured load of nb takes %.2f s', $load_s));
my $bad = 0;
for my $round (1 .. 6)
{
	my $victim = $round % 2 ? 'backend' : 'postmaster';
	my ($src, $nodes) = $round % 2 ? ('eb', 'nb') : ('e', 'n');
	my ($o, $e) = ('', '');
	# (stdin from /dev/null: a pipe to a psql whose server was killed could fail the harness
	# with EPIPE, as one fresh-clone run did, "exited 32")
	my $h = IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
		"SELECT gnn.load_graph('fd', '$src', nodes => '$nodes', features => 'feat', feature_store => 'disk', replace => true)" ],
		'<', '/dev/null', '>', \$o, '2>', \$e);
	usleep(int(rand($load_s * 1.2) * 1e6));
	if ($victim eq 'backend')
	{
		my $pid = sq(q{SELECT pid FROM pg_stat_activity WHERE query LIKE '%gnn.load_graph(''fd''%' AND pid <> pg_backend_pid()});
		kill 'KILL', $pid if $pid;
	}
	else
	{
		power_cut();
		$node->start;
	}
	eval { $h->finish; };		# (its psql fails with its backend or server: expected)
	ok(wait_server(), "round $round ($victim killed): the server is back");
	my $state = sq(q{SELECT coalesce((SELECT nodes || ':' || state FROM gnn.graphs WHERE name = 'fd'), 'absent')});
	my ($nn) = split /:/, $state;
	my $digest = $state eq 'absent' ? '' : sq(q{SELECT gnn.graph_digest('fd')});
	my $ok = exists $versions{$nn} && $versions{$nn} eq $digest;
	$bad++ unless $ok;
	ok($ok, "round $round ($victim killed): 'fd' is a whole version ($state)");
	sq(q{SELECT gnn.load_graph('fd', 'e', nodes => 'n', features => 'feat', feature_store => 'disk', replace => true)})
		unless $ok;
	# a backend's death leaves what it wrote until the next start; a restart removes it
	if ($victim eq 'postmaster')
	{
		is(scalar(feature_files('fd')), 1, "round $round: only the live version's features file is left");
		is(scalar(grep { /\.tmp$/ } glob("$pgdata/gnn/*/*/*")), 0, "round $round: no temporary file is left");
	}
}
is($bad, 0, 'no kill left a corrupt or mixed graph');
$node->restart;
is(scalar(feature_files('fd')), 1, 'after a restart only the live version\'s features file is left');

$node->stop;
done_testing();
