/*
 * gnn_train_cli: train a GNN on a dataset directory, several seeds, and
 * report per-seed test accuracy, mean / std, and the time per epoch broken
 * down into sparse aggregation, dense products and everything else.
 *
 *   gnn_train_cli --data ../shared/data/cora --model gcn --epochs 200 \
 *                 --seeds 10 --threads 2 [--backend cpu|cuda] [--aggr mean|pool]
 *                 [--hidden N] [--heads N] [--out-heads N] [--lr X] [--wd X]
 *                 [--dropout X] [--attn-dropout X] [--patience N]
 *                 [--select loss|acc|gat] [--optimizer adam|sgd] [--seed S]
 *                 [--no-timing] [--verbose]
 */
#include "graph/dataset.h"
#include "train/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
usage(void)
{
	fprintf(stderr,
			"usage: gnn_train_cli --data DIR [--model gcn|graphsage|gat] [--epochs N] [--seeds N]\n"
			"       [--threads N] [--backend cpu|cuda] [--cuda-so PATH] [--aggr mean|pool]\n"
			"       [--hidden N] [--layers N] [--heads N] [--out-heads N] [--lr X] [--wd X]\n"
			"       [--dropout X] [--attn-dropout X] [--patience N] [--select loss|acc|gat]\n"
			"       [--optimizer adam|sgd] [--seed S] [--no-timing] [--verbose]\n");
}

static void
on_epoch(void *arg, const gnn_epoch_metrics *m)
{
	(void) arg;
	printf("  epoch %3d  loss %.4f  train %.3f  val %.4f / %.3f  test %.3f%s\n", m->epoch,
		   m->train_loss, m->train_acc, m->val_loss, m->val_acc, m->test_acc, m->best ? "  *" : "");
}

int
main(int argc, char **argv)
{
	const char *data = NULL,
			   *model = "gcn";
	int			seeds = 10;
	bool		verbose = false;
	gnn_train_config cfg;
	gnn_model_kind kind;
	gnn_dataset ds;
	gnn_error	err;
	gnn_backend *be = NULL;
	double		sum = 0,
				sumsq = 0,
				t_epoch = 0,
				t_agg = 0,
				t_dense = 0,
				t_other = 0;
	int64_t		total_epochs = 0;
	uint64_t	seed0 = 0;

	/* first pass: the model kind sets the defaults */
	for (int i = 1; i < argc - 1; i++)
		if (strcmp(argv[i], "--model") == 0)
			model = argv[i + 1];
	if (!gnn_parse_model_kind(model, &kind))
	{
		fprintf(stderr, "unknown model \"%s\" (accepted: gcn, graphsage, gat)\n", model);
		return 2;
	}
	gnn_train_config_default(kind, &cfg);
	cfg.timing = true;
	for (int i = 1; i < argc; i++)
	{
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool		ok = true;

#define ARG(name) (strcmp(a, name) == 0 && v && (i++, true))
		if (ARG("--data"))
			data = v;
		else if (ARG("--model"))
			;
		else if (ARG("--epochs"))
			cfg.epochs = atoi(v);
		else if (ARG("--seeds"))
			seeds = atoi(v);
		else if (ARG("--seed"))
			seed0 = strtoull(v, NULL, 10);
		else if (ARG("--threads"))
			cfg.threads = atoi(v);
		else if (ARG("--backend"))
			snprintf(cfg.backend, sizeof(cfg.backend), "%s", v);
		else if (ARG("--cuda-so"))
			cfg.cuda_so = v;
		else if (ARG("--aggr"))
			ok = gnn_parse_aggr(v, &cfg.aggr);
		else if (ARG("--hidden"))
			cfg.hidden = atoi(v);
		else if (ARG("--layers"))
			cfg.layers = atoi(v);
		else if (ARG("--heads"))
			cfg.heads = atoi(v);
		else if (ARG("--out-heads"))
			cfg.out_heads = atoi(v);
		else if (ARG("--lr"))
			cfg.lr = strtof(v, NULL);
		else if (ARG("--wd"))
			cfg.weight_decay = strtof(v, NULL);
		else if (ARG("--dropout"))
			cfg.dropout = strtof(v, NULL);
		else if (ARG("--attn-dropout"))
			cfg.attn_dropout = strtof(v, NULL);
		else if (ARG("--patience"))
			cfg.patience = atoi(v);
		else if (ARG("--select"))
			ok = gnn_parse_select(v, &cfg.select);
		else if (ARG("--optimizer"))
			ok = gnn_parse_optim(v, &cfg.optimizer);
		else if (strcmp(a, "--no-timing") == 0)
			cfg.timing = false;
		else if (strcmp(a, "--verbose") == 0)
			verbose = true;
		else
		{
			usage();
			return 2;
		}
		if (!ok)
		{
			fprintf(stderr, "bad value for %s: %s\n", a, v);
			return 2;
		}
	}
	if (!data || seeds < 1)
	{
		usage();
		return 2;
	}
	gnn_error_clear(&err);
	if (gnn_train_config_check(&cfg, &err) != GNN_OK)
	{
		fprintf(stderr, "error: %s\n", err.msg);
		return 2;
	}
	if (gnn_dataset_load(data, cfg.threads, &ds, &err) != GNN_OK)
	{
		fprintf(stderr, "error: %s\n", err.msg);
		return 1;
	}
	if (gnn_backend_create(cfg.backend, cfg.threads, cfg.cuda_so, &be, &err) != GNN_OK)
	{
		fprintf(stderr, "error: %s\n", err.msg);
		gnn_dataset_free(&ds);
		return 1;
	}
	printf("# dataset %s: %lld nodes, %lld arcs, %d features (%s), %d classes, train/val/test %lld/%lld/%lld\n",
		   data, (long long) ds.g.num_nodes, (long long) ds.g.num_edges, ds.g.feat_dim,
		   ds.g.feat_kind == GNN_FEAT_SPARSE ? "sparse" : "dense", ds.g.num_classes,
		   (long long) ds.g.n_train, (long long) ds.g.n_val, (long long) ds.g.n_test);
	printf("# model %s hidden %d layers %d heads %d/%d dropout %.2f attn %.2f lr %g wd %g epochs %d patience %d backend %s threads %d\n",
		   gnn_model_kind_name(cfg.model), cfg.hidden, cfg.layers, cfg.heads, cfg.out_heads,
		   cfg.dropout, cfg.attn_dropout, cfg.lr, cfg.weight_decay, cfg.epochs, cfg.patience,
		   be->name, cfg.threads);
	for (int s = 0; s < seeds; s++)
	{
		gnn_train_result res;

		cfg.seed = seed0 + (uint64_t) s;
		if (gnn_train_full(&ds.g, &cfg, be, verbose ? on_epoch : NULL, NULL, NULL, NULL, NULL,
						   &res, &err) != GNN_OK)
		{
			fprintf(stderr, "error: %s\n", err.msg);
			gnn_backend_destroy(be);
			gnn_dataset_free(&ds);
			return 1;
		}
		printf("seed %2llu  test_acc %.4f  (best epoch %d of %d, val loss %.4f acc %.4f)  %.3f s\n",
			   (unsigned long long) cfg.seed, res.best.test_acc, res.best_epoch, res.epochs_run,
			   res.best.val_loss, res.best.val_acc, res.seconds);
		fflush(stdout);
		sum += res.best.test_acc;
		sumsq += (double) res.best.test_acc * res.best.test_acc;
		t_epoch += res.seconds;
		t_agg += res.agg_s;
		t_dense += res.dense_s;
		t_other += res.other_s;
		total_epochs += res.epochs_run;
	}
	{
		double		mean = sum / seeds;
		double		var = seeds > 1 ? (sumsq - seeds * mean * mean) / (seeds - 1) : 0;

		printf("mean test accuracy %.4f  std %.4f  over %d seeds\n", mean, sqrt(var > 0 ? var : 0), seeds);
		printf("time per epoch %.3f ms (aggregation %.3f ms, dense products %.3f ms, other %.3f ms)%s\n",
			   1e3 * t_epoch / total_epochs, 1e3 * t_agg / total_epochs, 1e3 * t_dense / total_epochs,
			   1e3 * t_other / total_epochs, cfg.timing ? "" : " [timing off: breakdown not kept]");
		printf("time per run %.3f s (%.1f epochs on average; an epoch = train step + eval pass)\n",
			   t_epoch / seeds, (double) total_epochs / seeds);
	}
	gnn_backend_destroy(be);
	gnn_dataset_free(&ds);
	return 0;
}
