# Input shapes: one graph loaded from a plain table, a view, a computed view,
# a partitioned table, a table under row-level security, a materialized view,
# a foreign table (postgres_fdw over a loopback server), and TOASTed,
# NULL-heavy node data gives the same graph every time: degrees and
# neighbours, features (through the predictions and embeddings of models
# trained with one seed), labels and splits.  The server runs with
# MALLOC_PERTURB_ set, so memory used after it was freed (as SPI's was)
# shows as wrong answers instead of passing by chance.
use FindBin;
use lib $FindBin::RealBin;
use GnnTest;

$ENV{MALLOC_PERTURB_} = '165';
my $node = gnn_node('shapes', conf => 'max_worker_processes = 16');

my $has_fdw = sq(q{SELECT count(*) FROM pg_available_extensions WHERE name = 'postgres_fdw'}) eq '1';
my ($host, $port) = ($node->host, $node->port);

# 600 nodes with 700 features each (so every feature array is TOASTed),
# text labels with a third of them NULL, splits with gaps
sq(q{
	CREATE EXTENSION gnn;
	SELECT setseed(0.25);
	CREATE TABLE base_n AS
	SELECT id::bigint AS id,
	       (SELECT array_agg((CASE WHEN j % 3 = id % 3 THEN 1 ELSE 0 END + random())::real ORDER BY j)
	          FROM generate_series(0, 699) j) AS feat,
	       CASE WHEN id % 3 = 2 AND id % 2 = 0 THEN NULL ELSE 'c' || (id % 3) END AS label,
	       CASE WHEN id % 10 < 5 THEN 'train' WHEN id % 10 < 7 THEN 'val' WHEN id % 10 < 9 THEN 'test' END AS split
	FROM generate_series(0, 599) id;
	CREATE TABLE base_e AS
	SELECT s.id AS src, ((random() * 199)::int * 3 + s.id % 3) % 600 AS dst, (1 + random())::float8 AS w
	FROM base_n s, generate_series(1, 4) k;
	CREATE ROLE reader LOGIN;
});
is(sq(q{SELECT count(*) FROM base_n WHERE pg_column_size(feat) < 2800}), '0', 'every feature array is stored TOASTed (2.8 kB)');
is(sq(q{SELECT count(*) FILTER (WHERE label IS NULL) > 50 AND count(*) FILTER (WHERE split IS NULL) > 50 FROM base_n}), 't',
	'labels and splits are NULL-heavy');

# the shapes: name => [node source, edge source, role]
my %shape = (
	table => [ 'base_n', 'base_e' ],
	view => [ 'v_n', 'v_e' ],
	computed => [ 'c_n', 'c_e' ],
	partitioned => [ 'p_n', 'p_e' ],
	rls => [ 'r_n', 'r_e', 'reader' ],
	matview => [ 'm_n', 'm_e' ],
);
sq(q{
	CREATE VIEW v_n AS SELECT * FROM base_n;
	CREATE VIEW v_e AS SELECT * FROM base_e;
	-- computed: every column is an expression over differently typed storage
	CREATE TABLE c_store AS SELECT id::int AS i, feat::float8[] AS f, label, upper(split) AS s FROM base_n;
	CREATE VIEW c_n AS SELECT (i + 0)::bigint AS id, f::real[] AS feat, lower('' || label) AS label, lower(s) AS split FROM c_store;
	CREATE VIEW c_e AS SELECT (src::int8 * 1)::int AS src, dst + 0 AS dst, w * 1 AS w FROM base_e;
	CREATE TABLE p_n (id bigint, feat real[], label text, split text) PARTITION BY HASH (id);
	CREATE TABLE p_n0 PARTITION OF p_n FOR VALUES WITH (MODULUS 3, REMAINDER 0);
	CREATE TABLE p_n1 PARTITION OF p_n FOR VALUES WITH (MODULUS 3, REMAINDER 1);
	CREATE TABLE p_n2 PARTITION OF p_n FOR VALUES WITH (MODULUS 3, REMAINDER 2);
	INSERT INTO p_n SELECT * FROM base_n ORDER BY random();
	CREATE TABLE p_e (src int, dst int, w float8) PARTITION BY RANGE (src);
	CREATE TABLE p_e0 PARTITION OF p_e FOR VALUES FROM (0) TO (300);
	CREATE TABLE p_e1 PARTITION OF p_e FOR VALUES FROM (300) TO (600);
	INSERT INTO p_e SELECT * FROM base_e;
	CREATE TABLE r_n AS SELECT *, 'reader'::text AS visible_to FROM base_n;
	INSERT INTO r_n SELECT id + 100000, feat, label, split, 'nobody' FROM base_n LIMIT 50;   -- rows the policy hides
	CREATE TABLE r_e AS SELECT *, 'reader'::text AS visible_to FROM base_e;
	INSERT INTO r_e SELECT src + 100000, dst + 100000, w, 'nobody' FROM base_e LIMIT 50;
	ALTER TABLE r_n ENABLE ROW LEVEL SECURITY;
	ALTER TABLE r_e ENABLE ROW LEVEL SECURITY;
	CREATE POLICY mine ON r_n USING (visible_to = current_user);
	CREATE POLICY mine ON r_e USING (visible_to = current_user);
	GRANT SELECT ON r_n, r_e, base_n TO reader;
	GRANT CREATE ON SCHEMA public TO reader;
	CREATE MATERIALIZED VIEW m_n AS SELECT * FROM base_n;
	CREATE MATERIALIZED VIEW m_e AS SELECT * FROM base_e;
});
if ($has_fdw)
{
	sq(qq{
		CREATE EXTENSION postgres_fdw;
		CREATE SERVER loop FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$host', port '$port', dbname 'postgres');
		CREATE USER MAPPING FOR CURRENT_USER SERVER loop;
		CREATE FOREIGN TABLE f_n (id bigint, feat real[], label text, split text) SERVER loop OPTIONS (table_name 'base_n');
		CREATE FOREIGN TABLE f_e (src int, dst int, w float8) SERVER loop OPTIONS (table_name 'base_e');
	});
	$shape{foreign} = [ 'f_n', 'f_e' ];
}
else
{
	note('postgres_fdw is not installed: the foreign-table shape is skipped');
}

# load, train one model per shape (same seed), write what identifies the graph
my %got;
for my $s (sort keys %shape)
{
	my ($n, $e, $role) = @{ $shape{$s} };
	my $pre = $role ? "SET ROLE $role; " : '';
	my ($rc, $out, $err) = $node->psql('postgres', $pre . qq{
		SELECT nodes || ' ' || edges || ' ' || feature_dim || ' ' || classes || ' ' || train || ' ' || val || ' ' || test
		FROM gnn.load_graph('$s', '$e', weight => 'w', nodes => '$n', features => 'feat', label => 'label',
		                    split => 'split', undirected => true, skip_dangling => true)});
	is($rc, 0, "$s: loads") or diag($err);
	$got{$s}{info} = $out;
	$got{$s}{topology} = (
		$node->psql('postgres', $pre . qq{
		SELECT md5(string_agg(b.id || '>' || x.neighbor || ':' || x.weight, ',' ORDER BY b.id, x.neighbor))
		FROM (SELECT id FROM base_n WHERE id < 600) b, gnn.neighbors('$s', b.id, 'both') x}))[1];
	($rc, $out, $err) = $node->psql('postgres', $pre . qq{
		SELECT gnn.train('$s', model => 'gcn', name => '${s}_m', hidden => 8, epochs => 4, seed => 3,
		                 device => 'cpu', wait => true) > 0});
	is($rc, 0, "$s: trains") or diag($err);
	$got{$s}{predict} = ($node->psql('postgres', $pre . qq{
		SELECT md5(string_agg(id || ':' || label || ':' || class || ':' || round(score::numeric, 5), ',' ORDER BY id))
		FROM gnn.predict('${s}_m')}))[1];
	$got{$s}{embedding} = ($node->psql('postgres', $pre . qq{
		SELECT md5(string_agg(id || ':' || embedding::text, ',' ORDER BY id)) FROM gnn._embedding_rows('${s}_m')}))[1];
	$got{$s}{metrics} = ($node->psql('postgres', $pre . qq{SELECT metrics->>'test_acc' FROM gnn.models WHERE name = '${s}_m'}))[1];
}
like($got{table}{info}, qr/^600 \d+ 700 3 \d+ \d+ \d+$/, "the plain table's graph: $got{table}{info}");
for my $s (sort keys %shape)
{
	next if $s eq 'table';
	for my $k (qw(info topology predict embedding metrics))
	{
		is($got{$s}{$k}, $got{table}{$k}, "$s: same $k as the plain table");
	}
}
like(sq('SELECT 1'), qr/1/, 'the server is up after every shape');

$node->stop;
done_testing();
