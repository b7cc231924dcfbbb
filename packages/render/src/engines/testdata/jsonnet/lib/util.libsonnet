{
  image(env):: if env == 'prod' then 'nginx:1.27' else 'nginx:latest',
}
