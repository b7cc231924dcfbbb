local k = import 'k/k.libsonnet';
local util = import 'lib/util.libsonnet';
function(replicas=1, tier='web')
  local env = std.extVar('env');
  {
    deployment: k.deployment('web-' + env, replicas, util.image(env)),
    config: k.configMap('web-' + env, { tier: tier, env: env, banner: importstr 'lib/banner.txt' }),
    extra: [
      k.configMap('flag-' + i, { index: std.toString(i) })
      for i in std.range(1, 3)
    ],
  }
