/*
 * make_seeds DIR [--safetensors]: write one valid small model blob per
 * architecture into DIR (gnn's own serialised form, or safetensors as
 * gnn.export_model writes it).
 */
#include "nn/serialize.h"
#include "nn/safetensors.h"

#include <string.h>

#include <stdio.h>
#include <stdlib.h>

int
main(int argc, char **argv)
{
	gnn_backend *be;
	gnn_error	err;
	int			k = 0;
	int			st_mode = argc > 2 && strcmp(argv[2], "--safetensors") == 0;

	if (argc < 2 || gnn_backend_cpu_create(1, &be, &err) != GNN_OK)
		return 1;
	for (int kind = 0; kind < 3; kind++)
		for (int aggr = 0; aggr < 2; aggr++)
		{
			gnn_model_config c;
			gnn_model  *m;
			gnn_rng		rng;
			void	   *blob;
			size_t		size;
			char		path[1024];
			FILE	   *f;

			gnn_model_config_default((gnn_model_kind) kind, &c);
			c.in_dim = 3;
			c.out_dim = 2;
			c.hidden = 2;
			c.heads = 2;
			c.aggr = (gnn_aggr) aggr;
			gnn_rng_seed(&rng, 1);
			if (gnn_model_create(be, &c, &rng, &m, &err) != GNN_OK ||
				(st_mode ? gnn_model_to_safetensors(m, NULL, NULL, 0, &blob, &size, &err) :
				 gnn_model_serialize(m, NULL, &blob, &size, &err)) != GNN_OK)
				return 1;
			snprintf(path, sizeof(path), "%s/seed%d", argv[1], k++);
			f = fopen(path, "wb");
			if (!f)
				return 1;
			/* odd first byte keeps the CRC re-stamping on for mutations of it */
			fwrite(blob, 1, size, f);
			fclose(f);
			free(blob);
			gnn_model_free(m);
		}
	gnn_backend_destroy(be);
	return 0;
}
