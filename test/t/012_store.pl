# The graph store (src/pg/store.c): loaded graphs survive restarts and
# crashes.  Restart: graphs, their owners, partitions and contents (digests)
# come back, unmapped until used; roles still see only their own; replacing
# and persist => false behave; a stored file with a flipped byte, a bad
# header or a cut tail makes its graph invalid with the reason, never
# mapped, the server fine; SIGKILL of a loading backend and of the
# postmaster at random points of a persisting load leave the old version or
# the new one, whole, never a corrupt one; DROP EXTENSION removes the store
# (not when rolled back); a dropped database's graphs go at the next start.
use FindBin;
use lib $FindBin::RealBin;
use GnnTest;
use IPC::Run;
use Time::HiRes qw(usleep);

my $node = gnn_node('store', conf => q{
max_worker_processes = 16
restart_after_crash = on
});
my $pgdata = $node->data_dir;
sub store_files
{
	my @f = glob("$pgdata/gnn/*/*/*");
	return scalar @f;
}

sq(q{
	CREATE EXTENSION gnn;
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE TABLE n AS SELECT id, (id % 4)::int AS label,
		CASE WHEN id < 80 THEN 'train' WHEN id < 300 THEN 'val' ELSE 'test' END AS split,
		ARRAY[(id % 7)::real, (id % 3)::real, 1] AS feat
	FROM generate_series(0, 499) id;
	CREATE TABLE e AS SELECT s.id AS src, ((s.id * 7 + k * 13) % 500) AS dst FROM n s, generate_series(1, 4) k;
	CREATE TABLE e2 AS SELECT * FROM e WHERE src % 2 = 0;
	GRANT SELECT ON n, e, e2 TO alice, bob;
	-- a schema graph with a uuid key
	CREATE TABLE customers (id uuid PRIMARY KEY, age int, country text);
	CREATE TABLE orders (id bigint PRIMARY KEY, customer_id uuid REFERENCES customers, amount float8);
	INSERT INTO customers SELECT md5(i::text)::uuid, 20 + i % 50, (ARRAY['de','fr','us'])[1 + i % 3]
		FROM generate_series(1, 200) i;
	INSERT INTO orders SELECT i, md5((1 + i % 200)::text)::uuid, i * 1.5 FROM generate_series(1, 600) i;
});
sq(q{SELECT gnn.load_graph('g', 'e', nodes => 'n', features => 'feat', label => 'label', split => 'split')});
sq(q{SELECT gnn.partition('g', 4)});
sq(q{SELECT gnn.load_graph('mem', 'e', persist => false)});
sq(q{SELECT gnn.load_schema_graph('shop', ARRAY['customers', 'orders']::regclass[])});
sq(q{SET ROLE alice; SELECT gnn.load_graph('mine', 'e')});
sq(q{SET ROLE bob; SELECT gnn.load_graph('mine', 'e2')});
sq(q{SET gnn.persist_graphs = off; SELECT gnn.load_graph('off', 'e')});

my $listed = q{SELECT string_agg(name || ':' || owner || ':' || nodes || ':' || edges || ':' || persisted, ','
	ORDER BY name, owner::text) FROM gnn.graphs};
my %digest;
$digest{$_} = sq("SELECT gnn.graph_digest('$_')") for qw(g shop);
$digest{alice} = sq("SET ROLE alice; SELECT gnn.graph_digest('mine')");
$digest{bob} = sq("SET ROLE bob; SELECT gnn.graph_digest('mine')");
my $parts = sq(q{SELECT string_agg(part || ':' || nodes || ':' || train_nodes, ',' ORDER BY part) FROM gnn.partition_stats('g')});
my $g_bytes = sq(q{SELECT bytes FROM gnn.graphs WHERE name = 'g'});
my $before = sq($listed);
like($before, qr/g:postgres:500:2000:true/, 'a graph loaded with the defaults is persisted');
like($before, qr/mem:postgres:\d+:2000:false/, 'persist => false is not');
like($before, qr/off:postgres:\d+:2000:false/, 'nor with gnn.persist_graphs off');
is(store_files(), 5, 'one file per persisted graph, and the partition');

# ------------------------------------------------------------------ restart
$node->restart;
(my $after_list = $before) =~ s/,?(mem|off):postgres:\d+:\d+:false//g;
is(sq($listed), $after_list, 'after a restart the persisted graphs are back: names, owners, sizes; the others gone');
is(sq(q{SELECT string_agg(DISTINCT state, ',') FROM gnn.graphs}), 'disk', 'all of them unmapped');
is(sq('SELECT gnn.memory_used()'), '0', 'and nothing in memory');
is(sq("SELECT gnn.graph_digest('g')"), $digest{g}, 'the graph is the same, bit for bit (digest)');
is(sq("SELECT gnn.graph_digest('shop')"), $digest{shop}, 'so is the schema graph, uuid keys and encodings');
is(sq(q{SELECT gnn.degree('shop', (SELECT id::text FROM customers ORDER BY id LIMIT 1), 'in', 'customers') >= 0}),
	't', 'and a text (uuid) key still finds its node');
is(sq("SELECT state FROM gnn.graphs WHERE name = 'g'"), 'memory', 'the first use mapped it');
ok(sq('SELECT gnn.memory_used()') > 0, 'and counted its memory');
# mapped so far: g (and its partition: 500 int32 and a header, in g's bytes) and shop
is(sq(q{SELECT gnn.memory_used() = (SELECT sum(bytes) FROM gnn.graphs WHERE state = 'memory')}),
	't', 'the accounting counts the mapped graphs');
is(sq(q{SELECT bytes FROM gnn.graphs WHERE name = 'g'}), $g_bytes, 'g with its partition takes what it took before');
is(sq(q{SELECT string_agg(part || ':' || nodes || ':' || train_nodes, ',' ORDER BY part) FROM gnn.partition_stats('g')}),
	$parts, 'the partition came back with it');
is(sq("SET ROLE alice; SELECT gnn.graph_digest('mine')"), $digest{alice}, "alice's graph is hers");
is(sq("SET ROLE bob; SELECT gnn.graph_digest('mine')"), $digest{bob}, "bob's is his");
is(sq("SET ROLE alice; SELECT count(*) FROM gnn.graphs"), '1', 'a role still sees only its own graphs');
my ($rc, $out, $err) = try_sql("SET ROLE alice; SELECT gnn.degree('g', 1)");
like($err, qr/does not exist/, "and cannot use another role's");

# ------------------------------------------------------------------ replace
sq(q{SELECT gnn.load_graph('g', 'e2', replace => true)});
is(store_files(), 4, "replacing a graph drops its old partition file");
# a P3 server's feature slice (feature_slice) comes back a slice: its columns and its meta
sq(q{SELECT gnn.load_graph('gs', 'e', nodes => 'n', features => 'feat', label => 'label', feature_slice => ARRAY[1, 2])});
my $slice = sq(q{SELECT feature_dim || ' ' || (gnn._graph_meta('gs')->'feature_slice')::text || ' ' || gnn.features('gs', 7)::text
                 FROM gnn.graphs WHERE name = 'gs'});
$node->restart;
is(sq("SELECT edges FROM gnn.graphs WHERE name = 'g'"), '1000', 'a replaced graph comes back as its new version');
is(sq(q{SELECT feature_dim || ' ' || (gnn._graph_meta('gs')->'feature_slice')::text || ' ' || gnn.features('gs', 7)::text
        FROM gnn.graphs WHERE name = 'gs'}), $slice, "a feature slice comes back the same slice ($slice)");
like($slice, qr/"index": 1/, 'its meta names the slice');
sq(q{SELECT gnn.drop_graph('gs')});
($rc, $out, $err) = try_sql("SELECT * FROM gnn.partition_stats('g')");
like($err, qr/not been partitioned/, 'without the old version\'s partition');
sq(q{SELECT gnn.load_graph('g', 'e', replace => true, persist => false)});
$node->restart;
is(sq("SELECT count(*) FROM gnn.graphs WHERE name = 'g'"), '0',
	'replaced by a graph kept in memory only, it does not come back');

# ------------------------------------------------------------------ damaged files
sub graph_file
{
	my ($name) = @_;
	my $hex = unpack('H*', $name);
	my @f = glob("$pgdata/gnn/*/*_$hex/graph.gnn");
	return $f[0];
}
sub damage
{
	my ($file, $how) = @_;
	open(my $fh, '+<', $file) or die "open $file: $!";
	binmode $fh;
	my $size = -s $file;
	if ($how eq 'payload' || $how eq 'header' || $how eq 'meta')
	{
		my $at = $how eq 'header' ? 20 : $how eq 'meta' ? 100 : $size - 7;
		seek($fh, $at, 0);
		read($fh, my $b, 1);
		seek($fh, $at, 0);
		print $fh chr(ord($b) ^ 0x5a);
	}
	elsif ($how eq 'truncate')
	{
		truncate($fh, $size - 100);
	}
	close $fh;
}
for my $how (qw(payload header meta truncate))
{
	sq("SELECT gnn.load_graph('d_$how', 'e')");
}
$node->stop;
damage(graph_file("d_$_"), $_) for qw(payload header meta truncate);
my ($dbdir) = glob("$pgdata/gnn/*");
mkdir("$dbdir/not_a_graph");
$node->start;
is(sq(q{SELECT string_agg(name || ':' || state, ',' ORDER BY name) FROM gnn.graphs WHERE name LIKE 'd\_%'}),
	'd_header:invalid,d_meta:invalid,d_payload:disk,d_truncate:invalid',
	'a damaged header, metadata or length is refused at startup; a damaged payload is found when it is read');
like(sq(q{SELECT store_error FROM gnn.graphs WHERE name = 'd_truncate'}), qr/lengths do not match/,
	'with the reason');
($rc, $out, $err) = try_sql("SELECT gnn.degree('d_payload', 1)");
like($err, qr/cannot be used: its stored files failed their checks.*\n.*payload checksum mismatch/,
	'using a graph whose payload was damaged is an error naming the damage');
is(sq(q{SELECT state || ':' || (store_error LIKE '%checksum%') FROM gnn.graphs WHERE name = 'd_payload'}), 'invalid:true',
	'and marks it invalid');
($rc, $out, $err) = try_sql("SELECT gnn.degree('d_header', 1)");
like($err, qr/header checksum mismatch/, 'a graph with a bad header is refused with its reason');
is(sq('SELECT gnn.memory_used()'), '0', 'nothing of them was mapped');
ok(wait_server(), 'the server is fine');
sq("SELECT gnn.drop_graph('d_$_')") for qw(payload header meta truncate);
is(scalar(glob("$pgdata/gnn/*/*_645f*")), undef, 'gnn.drop_graph removes their files');

# ------------------------------------------------------------------ crashes during a persisting load
sq(q{CREATE TABLE big1 AS SELECT g AS src, (g * 7919) % 300000 AS dst FROM generate_series(0::bigint, 299999) g;
	CREATE TABLE big2 AS SELECT g AS src, (g * 104729) % 400000 AS dst FROM generate_series(0::bigint, 799999) g;});
sq(q{SELECT gnn.load_graph('big', 'big1')});
my %versions = ('300000' => sq("SELECT gnn.graph_digest('big')"));
sq(q{SELECT gnn.load_graph('big', 'big2', replace => true)});
$versions{'800000'} = sq("SELECT gnn.graph_digest('big')");
sq(q{SELECT gnn.load_graph('big', 'big1', replace => true)});
my $t0 = Time::HiRes::time();
sq(q{SELECT gnn.load_graph('timing', 'big2')});
my $load_s = Time::HiRes::time() - $t0;
sq(q{SELECT gnn.drop_graph('timing')});
note(sprintf('a persisting load of big2 takes %.2f s', $load_s));
my $bad = 0;
my %seen;
for my $round (1 .. 8)
{
	my $victim = $round % 2 ? 'backend' : 'postmaster';
	my $src = $round % 2 ? 'big2' : 'big1';
	my ($in, $o, $e) = ('', '', '');
	my $h = IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
		"SELECT gnn.load_graph('big', '$src', replace => true)" ], '<', \$in, '>', \$o, '2>', \$e);
	# a random point of the load, its write and rename included
	usleep(int(rand($load_s * 1.2) * 1e6));
	if ($victim eq 'backend')
	{
		my $pid = sq(q{SELECT pid FROM pg_stat_activity WHERE query LIKE '%gnn.load_graph(''big''%' AND pid <> pg_backend_pid()});
		kill 'KILL', $pid if $pid;
	}
	else
	{
		# every process of the server at once, as a power cut would
		power_cut();
		$node->start;
	}
	$h->finish;
	ok(wait_server(), "round $round ($victim killed): the server is back");
	my $state = sq(q{SELECT coalesce((SELECT edges || ':' || state FROM gnn.graphs WHERE name = 'big'), 'absent')});
	my ($edges) = split /:/, $state;
	my $digest = $state eq 'absent' ? '' : sq("SELECT gnn.graph_digest('big')");
	my $ok = exists $versions{$edges} && $versions{$edges} eq $digest;
	$seen{$edges}++;
	$bad++ unless $ok;
	ok($ok, "round $round ($victim killed): 'big' is a whole version ($state)");
	sq(q{SELECT gnn.load_graph('big', 'big1', replace => true)}) unless $ok;
	# both kills restart shared memory, whose set-up removes what an interrupted write left
	is(scalar(grep { /\.tmp$/ } glob("$pgdata/gnn/*/*/*")), 0, "round $round: no temporary file is left");
}
note('versions seen after the kills: ' . join(', ', map { "$_ edges: $seen{$_}" } sort keys %seen));
is($bad, 0, 'no kill left a corrupt or mixed graph');

# ------------------------------------------------------------------ drop extension, dropped databases
sq(q{CREATE DATABASE other});
$node->safe_psql('other', q{CREATE EXTENSION gnn; CREATE TABLE e AS SELECT 1 AS src, 2 AS dst;
	SELECT gnn.load_graph('o', 'e')});
my $oid = sq(q{SELECT oid FROM pg_database WHERE datname = 'other'});
ok(-d "$pgdata/gnn/$oid", 'the other database has a store directory');
$node->safe_psql('other', q{BEGIN; DROP EXTENSION gnn; ROLLBACK;});
is($node->safe_psql('other', q{SELECT count(*) FROM gnn.graphs}), '1', 'a rolled-back DROP EXTENSION keeps the graphs');
ok(-f graph_file('o'), 'and their files');
$node->safe_psql('other', q{DROP EXTENSION gnn});
ok(!-e "$pgdata/gnn/$oid", 'DROP EXTENSION removes the database\'s store');
$node->safe_psql('other', q{CREATE EXTENSION gnn});
is($node->safe_psql('other', q{SELECT count(*) FROM gnn.graphs}), '0', 'and its graphs');
ok(sq(q{SELECT count(*) FROM gnn.graphs}) > 0, "another database's graphs are untouched");
$node->safe_psql('other', q{SELECT gnn.load_graph('o2', 'e')});
sq(q{DROP DATABASE other});
$node->restart;
ok(!-e "$pgdata/gnn/$oid", "a dropped database's graphs leave the store at the next start");

$node->stop;
done_testing();
