// The training drivers' flags (train_flags.h), one table for run_mlp and
// run_cnn.
#include "gemm_flags.h"
#include "tape_flags.h"
#include "train_flags.h"

static const char *const decay_names[] = {"none", "cosine", NULL};

void train_flags_add(struct flags *f, struct train_options *o)
{
    flags_add(f, flag_data(&o->data));
    flags_add(f, flag_long("--batch", "N", &o->batch, 1, 65536, "images per step"));
    flags_add(f, flag_long("--epochs", "N", &o->epochs, 0, 100000,
                           "passes over the training set; 0 with --load: evaluate only"));
    flags_add(f, flag_choice("--optim", "NAME", &o->optim, optim_names(), NULL,
                             "the optimizer: SGD with momentum 0.9, or Adam"));
    flags_add(f, flag_double("--lr", "X", &o->lr, 1e-12, 100.0,
                             "learning rate (default 0.001 for adam, 0.05 for sgd)"));
    flags_add(
        f, flag_choice("--lr-decay", "D", &o->cosine, decay_names, NULL,
                       "none, or cosine: each epoch's rate on half a cosine from --lr towards 0"));
    flags_add(
        f, flag_double("--wd", "X", &o->wd, 0.0, 10.0, "weight decay, an L2 term in the gradient"));
    flags_add(f, flag_long("--seed", "N", &o->seed, 0, 1e15, "initial weights and shuffles"));
    struct flag threads = flag_threads(&o->threads);
    threads.help = "OpenMP threads (default: all cores)";
    flags_add(f, threads);
    flags_add(f, gemm_backend_flag(&o->gemm));
    flags_add(f, tape_memory_flag(&o->memory));
    flags_add(f, flag_isa(&o->isa));
    flags_add(f, flag_output("--save", "FILE", &o->save, "write the trained model to FILE"));
    flags_add(f,
              flag_input("--load", "FILE", &o->load, "start from a saved model (the same model)"));
    struct flag csv = flag_csv(&o->csv);
    csv.help = "per-epoch rows: loss, accuracy, time, memory (with --val: on the held-out images)";
    flags_add(f, csv);
    flags_add(f, flag_long("--val", "N", &o->val, 0, 1e7,
                           "hold out N training images, chosen by --seed, and judge each epoch "
                           "on them; the test set is read once, at the end (0: judge on the "
                           "test set)"));
    flags_add(f, flag_output("--confusion", "FILE", &o->confusion,
                             "after training, the test set's confusion matrix as CSV"));
    flags_add(f, flag_output("--wrong", "FILE", &o->wrong,
                             "after training, the 16 wrong test images it was surest of, as CSV"));
    flags_add(f, flag_switch("--append", &o->append,
                             "add rows to the --csv file instead of starting it afresh"));
    flags_add(f, flag_machine(&o->machine));
}
