// The results files' header rows (schemas.h). Each is one string here, so
// that tools/schema.py can read it back: keep the form
// `const char SCHEMA_NAME[] = "..." "...";`.
#include "schemas.h"

const char SCHEMA_GEMM[] = "kernel,isa,threads,m,n,k,seconds,gflops,pct_peak,vs_openblas,"
                           "yardstick,slow";

const char SCHEMA_TRAIN[] = "model,dataset,framework,backend,threads,batch,optimizer,epoch,"
                            "seconds,images_per_s,train_loss,test_loss,test_acc,peak_rss_mb";

const char SCHEMA_TRAIN_VAL[] = "model,dataset,framework,backend,threads,batch,optimizer,lr,seed,"
                                "val_images,epoch,seconds,images_per_s,train_loss,val_loss,"
                                "val_acc,test_loss,test_acc,peak_rss_mb";

const char SCHEMA_SPEED[] = "model,framework,backend,threads,batch,seconds_per_epoch,"
                            "images_per_s,gflops,pct_peak,vs_pytorch,yardstick,slow";
