# A graph's shared segment is advised into 2 MB pages (MADV_HUGEPAGE) in
# every process that maps it, so that where the OS gives shared memory huge
# pages (/dev/shm mounted huge=within_size, or sysv segments with
# shmem_enabled=advise) the build and each backend map it with one entry per
# 2 MB: the advice shows as the "hg" flag of the mapping in /proc/PID/smaps
# whatever the OS then does with it.  GNN_HUGE_PAGES=0 in the server's
# environment turns it off.
use FindBin;
use lib $FindBin::RealBin;
use GnnTest;

plan skip_all => 'needs Linux /proc/PID/smaps' unless -r '/proc/self/smaps';
plan skip_all => 'this kernel has no transparent huge pages (no /sys/kernel/mm/transparent_hugepage)'
  unless -d '/sys/kernel/mm/transparent_hugepage';

my $node = gnn_node('huge', conf => 'max_worker_processes = 16');

# 100k nodes with 32 features: a 14 MB segment, over the 8 MB line
sq(q{
	CREATE EXTENSION gnn;
	CREATE TABLE hn AS SELECT i AS id, i % 3 AS label,
		CASE WHEN i % 10 < 6 THEN 'train' WHEN i % 10 < 8 THEN 'val' ELSE 'test' END AS split,
		array_fill((i % 7)::real, ARRAY[32]) AS feat FROM generate_series(0, 99999) i;
	CREATE TABLE he AS SELECT i AS src, (i * 7 + 1) % 100000 AS dst FROM generate_series(0, 99999) i;
});

# the flags of the worker's mappings of /dev/shm or sysv segments of 8 MB or more
sub segment_flags
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/smaps") or return ();
	my (@flags, $big);
	while (my $l = <$fh>)
	{
		if ($l =~ /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/)
		{
			my ($lo, $hi, $what) = (hex($1), hex($2), $3);
			$big = ($hi - $lo >= 8 << 20) && ($what =~ m{^/dev/shm/PostgreSQL\.|^/SYSV});
		}
		push @flags, $1 if $big && $l =~ /^VmFlags:\s*(.*)$/;
	}
	return @flags;
}

# a long job maps the graph for as long as it runs
sub job_flags
{
	my ($name) = @_;
	my $job = sq("SELECT gnn.train('hg', model => 'gcn', name => '$name', epochs => 1000000, seed => 1)");
	my $pid = '';
	for (1 .. 300)
	{
		$pid = sq("SELECT pid FROM pg_stat_activity WHERE backend_type = 'gnn training'");
		last if $pid =~ /^\d+$/
		  && sq("SELECT coalesce(max(epoch), 0) > 0 FROM gnn.training_log WHERE job = $job") eq 't';
		select(undef, undef, undef, 0.1);
	}
	my @f = $pid =~ /^\d+$/ ? segment_flags($pid) : ();
	sq("SELECT gnn.cancel($job)");
	for (1 .. 300)
	{
		last if sq("SELECT state FROM gnn.jobs WHERE id = $job") ne 'running';
		select(undef, undef, undef, 0.1);
	}
	return ($pid, @f);
}

sq(q{SELECT gnn.load_graph('hg', 'he', nodes => 'hn', features => 'feat', label => 'label', split => 'split', undirected => true)});
my ($pid, @flags) = job_flags('hg_on');
ok(@flags >= 1, "the training worker ($pid) maps the graph's segment") or diag("no segment of 8 MB or more mapped");
ok(@flags && !grep({ !/\bhg\b/ } @flags), 'advised into huge pages (VmFlags hg)') or diag(join("\n", @flags));

# off: GNN_HUGE_PAGES=0 in the server's environment
$node->stop;
{
	local $ENV{GNN_HUGE_PAGES} = '0';
	$node->start;
}
sq(q{SELECT gnn.load_graph('hg', 'he', nodes => 'hn', features => 'feat', label => 'label', split => 'split', undirected => true, replace => true)});
($pid, @flags) = job_flags('hg_off');
ok(@flags >= 1, "the training worker ($pid) maps the graph's segment");
ok(!grep({ /\bhg\b/ } @flags), 'no advice with GNN_HUGE_PAGES=0') or diag(join("\n", @flags));

$node->stop;
done_testing();
