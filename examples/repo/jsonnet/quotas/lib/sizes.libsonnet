{
  small: { cpu: '2', memory: '4Gi', pods: 20 },
  large: { cpu: '16', memory: '64Gi', pods: 200 },
}
